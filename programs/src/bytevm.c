/*
 * bytevm: a stack-machine bytecode interpreter. The dispatch is a dense
 * `switch`, which gcc compiles to a jump table (an indirect `jr` through a
 * table of case addresses). Three guest programs run on it: Collatz chain
 * lengths, Euclid's gcd over pairs, and a recursive Fibonacci with CALL/RET.
 *
 * Exercises: switch jump table, a state machine, data-dependent branches,
 * integer multiply/divide/remainder, loops with input-dependent trip counts.
 *
 * Arguments: [collatz_limit = 2000] [gcd_pairs = 4000] [fib_n = 20]
 */
#include "common.h"

enum op {
    OP_HALT, OP_PUSH, OP_LOAD, OP_STORE, OP_ADD, OP_SUB, OP_MUL, OP_DIV,
    OP_REM, OP_AND, OP_OR, OP_XOR, OP_SHL, OP_SHR, OP_LT, OP_EQ,
    OP_JMP, OP_JZ, OP_JNZ, OP_DUP, OP_DROP, OP_SWAP, OP_OVER, OP_CALL,
    OP_RET, OP_INC, OP_OUT,
};

#define MAX_CODE 256
#define STACK 256
#define NREG 8

typedef struct {
    uint32_t code[MAX_CODE];
    int len;
} prog_t;

static int emit(prog_t *p, uint32_t op)
{
    p->code[p->len] = op;
    return p->len++;
}

static int emit2(prog_t *p, uint32_t op, uint32_t arg)
{
    int at = emit(p, op);
    emit(p, arg);
    return at;
}

/* Patch the operand of a jump emitted at `at` to jump to `target`. */
static void patch(prog_t *p, int at, int target)
{
    p->code[at + 1] = (uint32_t)target;
}

typedef struct {
    uint32_t reg[NREG];
    uint32_t out;
    uint32_t steps;
    int error;
} vm_result_t;

static vm_result_t run(const prog_t *p, const uint32_t *init_reg)
{
    uint32_t stack[STACK];
    uint32_t rstack[STACK];
    int sp = 0, rsp = 0, pc = 0;
    vm_result_t r = { .out = 0, .steps = 0, .error = 0 };
    for (int i = 0; i < NREG; i++)
        r.reg[i] = init_reg[i];

    for (;;) {
        uint32_t op = p->code[pc++];
        uint32_t x, y;
        r.steps++;
        switch (op) {
        case OP_HALT:
            return r;
        case OP_PUSH:
            stack[sp++] = p->code[pc++];
            break;
        case OP_LOAD:
            stack[sp++] = r.reg[p->code[pc++] % NREG];
            break;
        case OP_STORE:
            r.reg[p->code[pc++] % NREG] = stack[--sp];
            break;
        case OP_ADD:
            y = stack[--sp];
            stack[sp - 1] += y;
            break;
        case OP_SUB:
            y = stack[--sp];
            stack[sp - 1] -= y;
            break;
        case OP_MUL:
            y = stack[--sp];
            stack[sp - 1] *= y;
            break;
        case OP_DIV:
            y = stack[--sp];
            if (y == 0) {
                r.error = 1;
                return r;
            }
            stack[sp - 1] /= y;
            break;
        case OP_REM:
            y = stack[--sp];
            if (y == 0) {
                r.error = 1;
                return r;
            }
            stack[sp - 1] %= y;
            break;
        case OP_AND:
            y = stack[--sp];
            stack[sp - 1] &= y;
            break;
        case OP_OR:
            y = stack[--sp];
            stack[sp - 1] |= y;
            break;
        case OP_XOR:
            y = stack[--sp];
            stack[sp - 1] ^= y;
            break;
        case OP_SHL:
            y = stack[--sp];
            stack[sp - 1] <<= (y & 31u);
            break;
        case OP_SHR:
            y = stack[--sp];
            stack[sp - 1] >>= (y & 31u);
            break;
        case OP_LT:
            y = stack[--sp];
            stack[sp - 1] = stack[sp - 1] < y;
            break;
        case OP_EQ:
            y = stack[--sp];
            stack[sp - 1] = stack[sp - 1] == y;
            break;
        case OP_JMP:
            pc = (int)p->code[pc];
            break;
        case OP_JZ:
            x = stack[--sp];
            pc = x == 0 ? (int)p->code[pc] : pc + 1;
            break;
        case OP_JNZ:
            x = stack[--sp];
            pc = x != 0 ? (int)p->code[pc] : pc + 1;
            break;
        case OP_DUP:
            stack[sp] = stack[sp - 1];
            sp++;
            break;
        case OP_DROP:
            sp--;
            break;
        case OP_SWAP:
            x = stack[sp - 1];
            stack[sp - 1] = stack[sp - 2];
            stack[sp - 2] = x;
            break;
        case OP_OVER:
            stack[sp] = stack[sp - 2];
            sp++;
            break;
        case OP_CALL:
            if (rsp == STACK) {
                r.error = 2;
                return r;
            }
            rstack[rsp++] = (uint32_t)(pc + 1);
            pc = (int)p->code[pc];
            break;
        case OP_RET:
            if (rsp == 0)
                return r;
            pc = (int)rstack[--rsp];
            break;
        case OP_INC:
            r.reg[p->code[pc++] % NREG]++;
            break;
        case OP_OUT:
            r.out = r.out * 33u + stack[--sp];
            break;
        default:
            r.error = 3;
            return r;
        }
        if (sp < 0 || sp >= STACK - 2) {
            r.error = 4;
            return r;
        }
    }
}

/* for n in 1..limit: count Collatz steps until 1; total in r1, max in r2. */
static void build_collatz(prog_t *p)
{
    p->len = 0;
    /* r0 = n (starts at 1), r3 = limit, r1 = total, r2 = max */
    int outer = p->len;
    emit2(p, OP_LOAD, 0);
    emit2(p, OP_LOAD, 3);
    emit(p, OP_LT);
    int done = emit2(p, OP_JZ, 0);
    emit2(p, OP_LOAD, 0);
    emit2(p, OP_STORE, 4);      /* r4 = x */
    emit2(p, OP_PUSH, 0);
    emit2(p, OP_STORE, 5);      /* r5 = steps */
    int inner = p->len;
    emit2(p, OP_LOAD, 4);
    emit2(p, OP_PUSH, 1);
    emit(p, OP_EQ);
    int inner_done = emit2(p, OP_JNZ, 0);
    emit2(p, OP_LOAD, 4);
    emit2(p, OP_PUSH, 2);
    emit(p, OP_REM);
    int odd = emit2(p, OP_JNZ, 0);
    emit2(p, OP_LOAD, 4);       /* even: x /= 2 */
    emit2(p, OP_PUSH, 2);
    emit(p, OP_DIV);
    emit2(p, OP_STORE, 4);
    int to_next = emit2(p, OP_JMP, 0);
    patch(p, odd, p->len);      /* odd: x = 3x + 1 */
    emit2(p, OP_LOAD, 4);
    emit2(p, OP_PUSH, 3);
    emit(p, OP_MUL);
    emit2(p, OP_PUSH, 1);
    emit(p, OP_ADD);
    emit2(p, OP_STORE, 4);
    patch(p, to_next, p->len);
    emit2(p, OP_INC, 5);
    emit2(p, OP_JMP, (uint32_t)inner);
    patch(p, inner_done, p->len);
    emit2(p, OP_LOAD, 1);       /* total += steps */
    emit2(p, OP_LOAD, 5);
    emit(p, OP_ADD);
    emit2(p, OP_STORE, 1);
    emit2(p, OP_LOAD, 2);       /* max = max(max, steps) */
    emit2(p, OP_LOAD, 5);
    emit(p, OP_LT);
    int no_max = emit2(p, OP_JZ, 0);
    emit2(p, OP_LOAD, 5);
    emit2(p, OP_STORE, 2);
    patch(p, no_max, p->len);
    emit2(p, OP_INC, 0);
    emit2(p, OP_JMP, (uint32_t)outer);
    patch(p, done, p->len);
    emit2(p, OP_LOAD, 1);
    emit(p, OP_OUT);
    emit2(p, OP_LOAD, 2);
    emit(p, OP_OUT);
    emit(p, OP_HALT);
}

/* r0 = pairs; LCG pairs (a, b) from r6; gcd by remainders; OUT each gcd. */
static void build_gcd(prog_t *p)
{
    p->len = 0;
    int outer = p->len;
    emit2(p, OP_LOAD, 0);
    int done = emit2(p, OP_JZ, 0);
    /* r6 = r6 * 1103515245 + 12345; a = (r6 >> 8) & 0xffff | 1 */
    emit2(p, OP_LOAD, 6);
    emit2(p, OP_PUSH, 1103515245u);
    emit(p, OP_MUL);
    emit2(p, OP_PUSH, 12345);
    emit(p, OP_ADD);
    emit(p, OP_DUP);
    emit2(p, OP_STORE, 6);
    emit2(p, OP_PUSH, 8);
    emit(p, OP_SHR);
    emit2(p, OP_PUSH, 0xfffff);
    emit(p, OP_AND);
    emit2(p, OP_PUSH, 1);
    emit(p, OP_OR);
    emit2(p, OP_LOAD, 6);       /* b = (r6 >> 3) & 0xfff | 1 */
    emit2(p, OP_PUSH, 3);
    emit(p, OP_SHR);
    emit2(p, OP_PUSH, 0xfff);
    emit(p, OP_AND);
    emit2(p, OP_PUSH, 1);
    emit(p, OP_OR);
    int loop = p->len;          /* stack: a b */
    emit(p, OP_DUP);
    int gcd_done = emit2(p, OP_JZ, 0);
    emit(p, OP_SWAP);           /* b a */
    emit(p, OP_OVER);           /* b a b */
    emit(p, OP_REM);            /* b a%b */
    emit2(p, OP_JMP, (uint32_t)loop);
    patch(p, gcd_done, p->len);
    emit(p, OP_DROP);
    emit(p, OP_OUT);
    emit2(p, OP_LOAD, 0);
    emit2(p, OP_PUSH, 1);
    emit(p, OP_SUB);
    emit2(p, OP_STORE, 0);
    emit2(p, OP_JMP, (uint32_t)outer);
    patch(p, done, p->len);
    emit(p, OP_HALT);
}

/* fib(n) by naive recursion on the data stack: n -> fib(n). */
static void build_fib(prog_t *p)
{
    p->len = 0;
    emit2(p, OP_LOAD, 0);
    int call = emit2(p, OP_CALL, 0);
    emit(p, OP_OUT);
    emit(p, OP_HALT);
    int fib = p->len;
    patch(p, call, fib);
    emit(p, OP_DUP);
    emit2(p, OP_PUSH, 2);
    emit(p, OP_LT);
    int base = emit2(p, OP_JNZ, 0);
    emit(p, OP_DUP);
    emit2(p, OP_PUSH, 1);
    emit(p, OP_SUB);
    emit2(p, OP_CALL, (uint32_t)fib); /* n fib(n-1) */
    emit(p, OP_SWAP);
    emit2(p, OP_PUSH, 2);
    emit(p, OP_SUB);
    emit2(p, OP_CALL, (uint32_t)fib); /* fib(n-1) fib(n-2) */
    emit(p, OP_ADD);
    patch(p, base, p->len);
    emit(p, OP_RET);
}

int main(int argc, char **argv)
{
    static prog_t prog;
    uint32_t reg[NREG] = { 0 };
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    vm_result_t r;

    build_collatz(&prog);
    reg[0] = 1;
    reg[3] = arg_u32(argc, argv, 0, 2000);
    r = run(&prog, reg);
    printf("bytevm: collatz below %u: total %u max %u (%u steps)\n", (unsigned)reg[3],
           (unsigned)r.reg[1], (unsigned)r.reg[2], (unsigned)r.steps);
    sum_add(&sum, r.out);
    sum_add(&sum, r.steps);
    if (r.error)
        failed = r.error;

    build_gcd(&prog);
    reg[0] = arg_u32(argc, argv, 1, 4000);
    reg[6] = 2463534242u;
    r = run(&prog, reg);
    printf("bytevm: gcd of %u pairs: digest %08x (%u steps)\n", (unsigned)reg[0],
           (unsigned)r.out, (unsigned)r.steps);
    sum_add(&sum, r.out);
    sum_add(&sum, r.steps);
    if (r.error)
        failed = r.error;

    build_fib(&prog);
    reg[0] = arg_u32(argc, argv, 2, 20);
    r = run(&prog, reg);
    printf("bytevm: fib(%u) = %u (%u steps)\n", (unsigned)reg[0], (unsigned)r.out,
           (unsigned)r.steps);
    sum_add(&sum, r.out);
    sum_add(&sum, r.steps);
    if (r.error)
        failed = r.error;

    return finish("bytevm", sum.h, failed);
}
