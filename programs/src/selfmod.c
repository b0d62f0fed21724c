/*
 * selfmod: code written at run time. A small function is copied from the
 * program's text into a data array and called there; an instruction of
 * another function is rewritten in place before each call (a `nop`, a
 * `div` or a `mul`), as is the immediate of its first instruction; and a
 * function is assembled word by word in the data array from a changing
 * immediate. Every change is followed by `fence.i`, as the ISA asks before
 * new code runs. Each result is checked against the same arithmetic in C.
 *
 * Exercises: code outside the ELF's executable segment, self-modifying
 * code, indirect calls into data, `fence.i`.
 *
 * Arguments: [rounds = 3000] [seed = 5]
 */
#include <string.h>
#include "common.h"

/*
 * Written in assembly, uncompressed, so that their words can be copied and
 * patched whole:
 * - mix(n, k), n >= 1: the sum over i = n down to 1 of (k if i is odd,
 *   else 1) — a loop with a branch, position-independent;
 * - op(a, b): t = IMM; then the instruction at op_slot (nop: t stays;
 *   div: t = a / b; mul: t = a * b); returns t + a. IMM is op_imm's
 *   immediate, patched too.
 */
__asm__(".text\n"
        ".option push\n"
        ".option norvc\n"
        ".balign 4\n"
        ".globl mix_begin\n"
        "mix_begin:\n"
        "  li t0, 0\n"
        "1: andi t1, a0, 1\n"
        "  beqz t1, 2f\n"
        "  add t0, t0, a1\n"
        "  j 3f\n"
        "2: addi t0, t0, 1\n"
        "3: addi a0, a0, -1\n"
        "  bnez a0, 1b\n"
        "  mv a0, t0\n"
        "  ret\n"
        ".globl mix_end\n"
        "mix_end:\n"
        ".globl op\n"
        "op:\n"
        ".globl op_imm\n"
        "op_imm:\n"
        "  li t0, 1\n"
        ".globl op_slot\n"
        "op_slot:\n"
        "  nop\n"
        "  add a0, t0, a0\n"
        "  ret\n"
        ".option pop\n");

extern const uint32_t mix_begin[], mix_end[];
extern uint32_t op_imm[], op_slot[];
uint32_t op(uint32_t a, uint32_t b);

typedef uint32_t (*fn2)(uint32_t, uint32_t);

#define NOP 0x00000013u
#define DIV_T0_A0_A1 0x02b542b3u
#define MUL_T0_A0_A1 0x02b502b3u
#define RET 0x00008067u
/* addi rd, rs1, imm */
#define ADDI(rd, rs1, imm) ((((uint32_t)(imm) & 0xfffu) << 20) | ((rs1) << 15) | ((rd) << 7) | 0x13u)

/* Outside the executable segment: code is copied and built here. */
static uint32_t ram_code[64] __attribute__((aligned(64)));

/* Make the stores above visible to instruction fetch (built with ISA spec
 * 2.2, where fence.i is in the base ISA: see programs/build.sh). */
static void sync_code(void)
{
    __asm__ volatile("fence.i" ::: "memory");
}

static uint32_t mix_in_c(uint32_t n, uint32_t k)
{
    uint32_t t = 0;
    for (uint32_t i = n; i > 0; i--)
        t += (i & 1u) ? k : 1u;
    return t;
}

int main(int argc, char **argv)
{
    uint32_t rounds = arg_u32(argc, argv, 0, 3000);
    uint32_t seed = arg_u32(argc, argv, 1, 5);
    rng_t rng;
    rng_seed(&rng, seed);
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    /* 1. A function copied into RAM and called there. */
    size_t words = (size_t)(mix_end - mix_begin);
    if (words > 64)
        return 99;
    memcpy(ram_code, mix_begin, words * 4);
    sync_code();
    fn2 mix = (fn2)(uintptr_t)ram_code;
    uint32_t mixed = 0;
    for (uint32_t i = 0; i < rounds; i++) {
        uint32_t n = 1 + rng_below(&rng, 40), k = rng_below(&rng, 7);
        uint32_t r = mix(n, k);
        if (r != mix_in_c(n, k))
            failed = 1;
        mixed += r;
        sum_add(&sum, r);
    }
    printf("selfmod: %u calls of a copied function, total %u\n", (unsigned)rounds,
           (unsigned)mixed);

    /* 2. An instruction and an immediate patched in place. */
    uint32_t ops[3] = {0, 0, 0};
    for (uint32_t i = 0; i < rounds; i++) {
        uint32_t which = rng_below(&rng, 3), imm = rng_below(&rng, 2000);
        op_slot[0] = which == 0 ? NOP : which == 1 ? DIV_T0_A0_A1 : MUL_T0_A0_A1;
        op_imm[0] = ADDI(5u, 0u, imm);
        sync_code();
        uint32_t a = rng_next(&rng) & 0xffffu, b = 1 + rng_below(&rng, 100);
        uint32_t r = op(a, b);
        uint32_t t = which == 0 ? imm : which == 1 ? a / b : a * b;
        if (r != t + a)
            failed = 2;
        ops[which]++;
        sum_add(&sum, r);
    }
    printf("selfmod: %u nop, %u div, %u mul patched in\n", (unsigned)ops[0],
           (unsigned)ops[1], (unsigned)ops[2]);

    /* 3. A function assembled in the data array: a0 += K; a0 -= a1. */
    fn2 built = (fn2)(uintptr_t)ram_code;
    uint32_t acc = 0;
    for (uint32_t i = 0; i < rounds / 4; i++) {
        uint32_t k = rng_below(&rng, 2000);
        ram_code[0] = ADDI(10u, 10u, k);
        ram_code[1] = 0x40b50533u; /* sub a0, a0, a1 */
        ram_code[2] = RET;
        sync_code();
        uint32_t x = rng_next(&rng) & 0xfffu, y = rng_below(&rng, 1000);
        uint32_t r = built(x, y);
        if (r != x + k - y)
            failed = 3;
        acc ^= r;
        sum_add(&sum, r);
    }
    printf("selfmod: %u functions built in data, xor %08x\n", (unsigned)(rounds / 4),
           (unsigned)acc);
    return finish("selfmod", sum.h, failed);
}
