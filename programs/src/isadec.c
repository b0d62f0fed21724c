/*
 * isadec: a variable-length instruction set, encoded, decoded and run.
 * Random instructions (skewed opcode mix, operands and immediates of random
 * size) are encoded into a byte stream with optional predicate and
 * wide-register prefixes, decoded back field by field and compared with
 * what was encoded, then executed on a 16-register machine whose
 * predicated instructions run or not on its flags.
 *
 * Exercises: control flow that follows random data and does not repeat —
 * prefix loops, a switch over operand formats, immediate lengths chosen
 * per instruction, a jump table over opcodes, predicates on computed
 * flags — with mul/div/rem (zero and overflow guarded), shifts by
 * register, and early exits on malformed input.
 *
 * Arguments: [instructions = 12000] [rounds = 6] [seed = 31]
 */
#include <string.h>
#include "common.h"

enum {
    OP_ADD, OP_SUB, OP_AND, OP_OR, OP_XOR, OP_SHL, OP_SHR, OP_SAR,
    OP_MUL, OP_DIV, OP_REM, OP_MIN, OP_MAX, OP_MOV, OP_LDI, OP_NOT,
    OP_NEG, OP_CMP, OP_TST, OP_ROL, OP_ROR, OP_BSW, OP_CNT, OP_CLZ,
    OP_LD, OP_ST, OP_SEL, OP_MAC, OP_ADC, OP_SBB, OP_SWP, OP_HSH,
    NUM_OPS
};

/* Operand formats: which fields follow the opcode byte. */
enum { F_NONE, F_R, F_RR, F_RI, F_RRI };

static const uint8_t format_of[NUM_OPS] = {
    F_RR, F_RR, F_RR, F_RR, F_RR, F_RR, F_RR, F_RR,
    F_RR, F_RR, F_RR, F_RR, F_RR, F_RR, F_RI, F_R,
    F_R, F_RR, F_RI, F_RI, F_RI, F_R, F_R, F_R,
    F_RRI, F_RRI, F_RRI, F_RRI, F_RR, F_RR, F_RR, F_NONE,
};

typedef struct {
    uint8_t op;
    uint8_t pred;  /* 0: always; 1..4: Z, NZ, N, NN */
    uint8_t wide;  /* registers 16..31 through the wide prefix */
    uint8_t rd, rs;
    uint32_t imm;
} insn_t;

#define MEM_WORDS 64
#define NREGS 32

/* Prefix bytes: 0xf0 + predicate (1..4), 0xf8 wide registers. */
#define P_PRED 0xf0u
#define P_WIDE 0xf8u

static uint32_t pick_op(rng_t *r)
{
    /* A skewed mix, as real code has: the first eight ops are common. */
    uint32_t x = rng_next(r);
    if ((x & 3u) != 0)
        return (x >> 2) % 8u;
    return (x >> 2) % NUM_OPS;
}

static uint32_t pick_imm(rng_t *r)
{
    uint32_t x = rng_next(r);
    switch (x & 7u) {
    case 0: case 1: case 2: return (x >> 3) & 0x7fu;
    case 3: case 4: return (x >> 3) & 0x3fffu;
    case 5: return 0;
    default: return x ^ (x >> 7);
    }
}

static void gen(rng_t *r, insn_t *in)
{
    uint32_t x = rng_next(r);
    in->op = (uint8_t)pick_op(r);
    in->pred = (x & 7u) < 2 ? (uint8_t)(1 + ((x >> 3) & 3u)) : 0;
    in->wide = (x >> 5) % 5u == 0;
    uint32_t hi = in->wide ? 16u : 0u;
    in->rd = (uint8_t)(hi | ((x >> 8) & 15u));
    in->rs = (uint8_t)(hi | ((x >> 12) & 15u));
    in->imm = 0;
    switch (format_of[in->op]) {
    /* Unused register fields encode as 0 (plus the wide offset). */
    case F_NONE: in->rd = in->rs = 0; in->wide = 0; break;
    case F_R: in->rs = (uint8_t)hi; break;
    case F_RR: break;
    case F_RI: in->rs = (uint8_t)hi; in->imm = pick_imm(r); break;
    case F_RRI: in->imm = pick_imm(r) & 0xffffu; break;
    }
    if (in->op == OP_LD || in->op == OP_ST)
        in->imm %= MEM_WORDS;
}

/* Immediate length code: 0 none, 1 one byte, 2 two, 3 four. */
static uint32_t imm_code(uint32_t imm)
{
    if (imm == 0)
        return 0;
    if (imm < 0x100u)
        return 1;
    if (imm < 0x10000u)
        return 2;
    return 3;
}

/* Encode one instruction; returns the bytes written. */
static size_t encode(const insn_t *in, uint8_t *p)
{
    size_t n = 0;
    if (in->pred)
        p[n++] = (uint8_t)(P_PRED + in->pred);
    if (in->wide)
        p[n++] = (uint8_t)P_WIDE;
    uint32_t f = format_of[in->op];
    uint32_t code = (f == F_RI || f == F_RRI) ? imm_code(in->imm) : 0;
    /* Opcode byte: op in bits 0..4, immediate length in bits 5..6. */
    p[n++] = (uint8_t)(in->op | code << 5);
    if (f != F_NONE)
        p[n++] = (uint8_t)((in->rd & 15u) | (in->rs & 15u) << 4);
    uint32_t len = code == 3 ? 4 : code;
    for (uint32_t i = 0; i < len; i++)
        p[n++] = (uint8_t)(in->imm >> (8 * i));
    return n;
}

/* Decode one instruction at p (len bytes left); returns the bytes read, 0
 * when malformed. */
static size_t decode(const uint8_t *p, size_t left, insn_t *in)
{
    size_t n = 0;
    memset(in, 0, sizeof *in);
    while (n < left && p[n] >= P_PRED) {
        uint8_t b = p[n++];
        if (b == P_WIDE) {
            if (in->wide)
                return 0;
            in->wide = 1;
        } else if (b > P_PRED && b <= P_PRED + 4) {
            if (in->pred)
                return 0;
            in->pred = (uint8_t)(b - P_PRED);
        } else {
            return 0;
        }
    }
    if (n >= left)
        return 0;
    uint8_t ob = p[n++];
    in->op = ob & 31u;
    uint32_t code = (ob >> 5) & 3u;
    uint32_t f = format_of[in->op];
    if (f == F_NONE) {
        if (code || in->wide)
            return 0;
        return n;
    }
    if (n >= left)
        return 0;
    uint8_t regs = p[n++];
    uint32_t hi = in->wide ? 16u : 0u;
    in->rd = (uint8_t)(hi | (regs & 15u));
    in->rs = (uint8_t)(hi | (regs >> 4));
    if (f != F_RI && f != F_RRI) {
        if (code)
            return 0;
        return n;
    }
    uint32_t len = code == 3 ? 4 : code;
    if (n + len > left)
        return 0;
    uint32_t imm = 0;
    for (uint32_t i = 0; i < len; i++)
        imm |= (uint32_t)p[n + i] << (8 * i);
    in->imm = imm;
    return n + len;
}

typedef struct {
    uint32_t r[NREGS];
    uint32_t mem[MEM_WORDS];
    uint32_t carry;
    uint32_t flags; /* bit 0 zero, bit 1 negative */
} machine_t;

static void set_flags(machine_t *m, uint32_t v)
{
    m->flags = (v == 0) | ((v >> 31) << 1);
}

static int holds(const machine_t *m, uint32_t pred)
{
    switch (pred) {
    case 1: return m->flags & 1u;
    case 2: return !(m->flags & 1u);
    case 3: return (m->flags >> 1) & 1u;
    case 4: return !((m->flags >> 1) & 1u);
    default: return 1;
    }
}

static uint32_t rotl(uint32_t v, uint32_t k)
{
    k &= 31u;
    return k ? (v << k) | (v >> (32 - k)) : v;
}

static uint32_t popcount(uint32_t v)
{
    uint32_t n = 0;
    while (v) {
        v &= v - 1;
        n++;
    }
    return n;
}

static uint32_t clz(uint32_t v)
{
    uint32_t n = 0;
    if (v == 0)
        return 32;
    while (!(v & 0x80000000u)) {
        v <<= 1;
        n++;
    }
    return n;
}

static void execute(machine_t *m, const insn_t *in)
{
    if (!holds(m, in->pred))
        return;
    uint32_t *d = &m->r[in->rd];
    uint32_t a = *d, b = m->r[in->rs], v;
    switch (in->op) {
    case OP_ADD: v = a + b; break;
    case OP_SUB: v = a - b; break;
    case OP_AND: v = a & b; break;
    case OP_OR: v = a | b; break;
    case OP_XOR: v = a ^ b; break;
    case OP_SHL: v = a << (b & 31u); break;
    case OP_SHR: v = a >> (b & 31u); break;
    case OP_SAR: v = (uint32_t)((int32_t)a >> (b & 31u)); break;
    case OP_MUL: v = a * b; break;
    case OP_DIV:
        if (b == 0)
            v = 0xffffffffu;
        else if ((int32_t)a == INT32_MIN && (int32_t)b == -1)
            v = a;
        else
            v = (uint32_t)((int32_t)a / (int32_t)b);
        break;
    case OP_REM:
        if (b == 0)
            v = a;
        else if ((int32_t)a == INT32_MIN && (int32_t)b == -1)
            v = 0;
        else
            v = (uint32_t)((int32_t)a % (int32_t)b);
        break;
    case OP_MIN: v = (int32_t)a < (int32_t)b ? a : b; break;
    case OP_MAX: v = a > b ? a : b; break;
    case OP_MOV: v = b; break;
    case OP_LDI: v = in->imm; break;
    case OP_NOT: v = ~a; break;
    case OP_NEG: v = 0u - a; break;
    case OP_CMP: set_flags(m, a - b); return;
    case OP_TST: set_flags(m, a & in->imm); return;
    case OP_ROL: v = rotl(a, in->imm); break;
    case OP_ROR: v = rotl(a, 32u - (in->imm & 31u)); break;
    case OP_BSW:
        v = (a >> 24) | ((a >> 8) & 0xff00u) | ((a << 8) & 0xff0000u) | (a << 24);
        break;
    case OP_CNT: v = popcount(a); break;
    case OP_CLZ: v = clz(a); break;
    case OP_LD: v = m->mem[(b + in->imm) % MEM_WORDS]; break;
    case OP_ST: m->mem[(b + in->imm) % MEM_WORDS] = a; return;
    case OP_SEL: v = (m->flags & 1u) ? b : in->imm; break;
    case OP_MAC: v = a + b * (in->imm | 1u); break;
    case OP_ADC: {
        uint32_t s = a + b;
        uint32_t c = s < a;
        v = s + m->carry;
        m->carry = c | (v < s);
        break;
    }
    case OP_SBB: {
        uint32_t s = a - b;
        uint32_t c = a < b;
        v = s - m->carry;
        m->carry = c | (s < m->carry);
        break;
    }
    case OP_SWP:
        m->r[in->rd] = b;
        m->r[in->rs] = a;
        set_flags(m, a ^ b);
        return;
    case OP_HSH: {
        uint32_t h = 2166136261u;
        for (uint32_t i = 0; i < 8; i++) {
            h ^= m->r[i];
            h *= 16777619u;
        }
        m->r[0] = h;
        set_flags(m, h);
        return;
    }
    default: return;
    }
    *d = v;
    set_flags(m, v);
}

static int same(const insn_t *a, const insn_t *b)
{
    return a->op == b->op && a->pred == b->pred && a->wide == b->wide &&
           a->rd == b->rd && a->rs == b->rs && a->imm == b->imm;
}

int main(int argc, char **argv)
{
    uint32_t count = arg_u32(argc, argv, 0, 12000);
    uint32_t rounds = arg_u32(argc, argv, 1, 6);
    uint32_t seed = arg_u32(argc, argv, 2, 31);
    if (count == 0)
        count = 1;
    insn_t *prog = malloc(count * sizeof *prog);
    /* At most 2 prefixes + opcode + registers + 4 immediate bytes. */
    uint8_t *code = malloc(count * 8u);
    if (!prog || !code)
        return 99;

    rng_t rng;
    rng_seed(&rng, seed);
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    uint32_t bytes_total = 0, skipped = 0, ops[NUM_OPS] = {0};
    machine_t m;
    memset(&m, 0, sizeof m);
    for (uint32_t i = 0; i < NREGS; i++)
        m.r[i] = rng_next(&rng);

    for (uint32_t round = 0; round < rounds && !failed; round++) {
        size_t len = 0;
        for (uint32_t i = 0; i < count; i++) {
            gen(&rng, &prog[i]);
            len += encode(&prog[i], code + len);
        }
        bytes_total += (uint32_t)len;

        size_t at = 0;
        uint32_t i = 0;
        while (at < len) {
            insn_t in;
            size_t n = decode(code + at, len - at, &in);
            if (n == 0) {
                failed = 1;
                break;
            }
            if (i >= count || !same(&in, &prog[i])) {
                failed = 2;
                break;
            }
            if (!holds(&m, in.pred))
                skipped++;
            ops[in.op]++;
            execute(&m, &in);
            at += n;
            i++;
            if ((i & 255u) == 0)
                sum_add(&sum, m.r[i & 31u] ^ m.flags);
        }
        if (!failed && i != count)
            failed = 3;
        /* A corrupted stream must be refused, not misread: a prefix
         * repeated. */
        if (!failed) {
            uint8_t bad[4] = {P_WIDE, P_WIDE, OP_ADD, 0x21};
            insn_t in;
            if (decode(bad, sizeof bad, &in) != 0)
                failed = 4;
        }
        for (uint32_t k = 0; k < NREGS; k++)
            sum_add(&sum, m.r[k]);
        for (uint32_t k = 0; k < MEM_WORDS; k++)
            sum_add(&sum, m.mem[k]);
        printf("round %u: %u instructions in %u bytes, r0 %08x\n", (unsigned)round,
               (unsigned)count, (unsigned)len, (unsigned)m.r[0]);
    }
    sum_add(&sum, bytes_total);
    sum_add(&sum, skipped);
    for (uint32_t k = 0; k < NUM_OPS; k++)
        sum_add(&sum, ops[k]);
    printf("%u bytes, %u skipped by predicate\n", (unsigned)bytes_total, (unsigned)skipped);
    free(code);
    free(prog);
    return finish("isadec", sum.h, failed);
}
