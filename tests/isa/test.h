/*
 * test.h: startup, semihosting exit and one-line test-case macros for the
 * ISA self-check tests. Include it first in every tests/isa/*.S file.
 *
 * Conventions
 * - gp holds the number of the running test case; a failed check jumps to
 *   `fail`, which prints "FAIL <n>" with SYS_WRITE0 and exits through
 *   SYS_EXIT_EXTENDED with exit code n (so n must stay in 1..254).
 * - A file's tests go between TEST_BEGIN and TEST_END; TEST_END prints
 *   "PASS" and exits 0.
 * - A trap that a test did not announce (TEST_TRAP) is a failure with exit
 *   code 255, after printing "FAIL trap" and the cause.
 * - Operands of the macros are immediates; results are checked in t2/t3,
 *   operands live in a1/a2 and results in a0 unless a macro says otherwise.
 */
#ifndef RETRACE_ISA_TEST_H
#define RETRACE_ISA_TEST_H

#if __riscv_xlen == 64
#define XLEN 64
#define LREG ld
#define SREG sd
#define REGBYTES 8
#else
#define XLEN 32
#define LREG lw
#define SREG sw
#define REGBYTES 4
#endif

/* XL(v32, v64): the value for the XLEN being built. */
#if XLEN == 64
#define XL(v32, v64) v64
#else
#define XL(v32, v64) v32
#endif

/* Semihosting operation numbers (RISC-V semihosting = ARM's numbering). */
#define SYS_WRITE0 0x04
#define SYS_EXIT_EXTENDED 0x20
#define ADP_Stopped_ApplicationExit 0x20026

/* The semihosting trap: three uncompressed instructions, not crossing a page. */
#define SEMIHOST_CALL            \
    .balign 16;                  \
    .option push;                \
    .option norvc;               \
    slli zero, zero, 0x1f;       \
    ebreak;                      \
    srai zero, zero, 7;          \
    .option pop

/* .file names the source in the symbol table (the default would be a
 * temporary file name, which would make the build irreproducible).
 * No linker relaxation: code addresses are what the assembler laid out,
 * which the tests of compressed jumps rely on (and gp is the test number,
 * not a global pointer). */
#define TEST_BEGIN                                  \
    .file __FILE__;                                 \
    .option norelax;                                \
    .section .text.init, "ax";                      \
    .globl _start;                                  \
_start:                                             \
    la sp, _stack_top;                              \
    la t0, trap_entry;                              \
    csrw mtvec, t0;                                 \
    li gp, 0;                                       \
    j tests_start;                                  \
    TEST_RUNTIME;                                   \
tests_start:

#define TEST_END                                    \
    li gp, 0;                                       \
    la a1, msg_pass;                                \
    li a0, SYS_WRITE0;                              \
    SEMIHOST_CALL;                                  \
    li a0, 0;                                       \
    j exit_with_a0;                                 \
    TEST_DATA

/* ---- runtime: fail, exit, trap handler ---- */

#define TEST_RUNTIME                                                    \
fail:                                                                   \
    /* "FAIL " then gp in decimal */                                    \
    la a1, msg_fail;                                                    \
    li a0, SYS_WRITE0;                                                  \
    SEMIHOST_CALL;                                                      \
    mv a0, gp;                                                          \
    jal print_decimal;                                                  \
    la a1, msg_nl;                                                      \
    li a0, SYS_WRITE0;                                                  \
    SEMIHOST_CALL;                                                      \
    mv a0, gp;                                                          \
    /* fall through */                                                  \
exit_with_a0:                                                           \
    la a1, exit_block;                                                  \
    li t0, ADP_Stopped_ApplicationExit;                                 \
    SREG t0, 0(a1);                                                     \
    SREG a0, REGBYTES(a1);                                              \
    li a0, SYS_EXIT_EXTENDED;                                           \
    SEMIHOST_CALL;                                                      \
1:  j 1b;                                                               \
                                                                        \
/* print a0 (unsigned) in decimal; clobbers a0-a2, t0-t1 */             \
print_decimal:                                                          \
    la a1, num_buf + 24;                                                \
    sb zero, 0(a1);                                                     \
    li t0, 10;                                                          \
2:  remu t1, a0, t0;                                                    \
    divu a0, a0, t0;                                                    \
    addi t1, t1, '0';                                                   \
    addi a1, a1, -1;                                                    \
    sb t1, 0(a1);                                                       \
    bnez a0, 2b;                                                        \
    li a0, SYS_WRITE0;                                                  \
    SEMIHOST_CALL;                                                      \
    ret;                                                                \
                                                                        \
/* Trap handler: records mcause/mepc/mtval, skips the trapping          \
 * instruction (2 or 4 bytes) and returns, if a test announced the      \
 * trap by setting trap_expected; otherwise the run fails. */           \
    .balign 4;                                                          \
trap_entry:                                                             \
    csrw mscratch, t0;                                                  \
    la t0, trap_expected;                                               \
    LREG t0, 0(t0);                                                     \
    beqz t0, unexpected_trap;                                           \
    la t0, trap_cause;                                                  \
    csrr t6, mcause;                                                    \
    SREG t6, 0(t0);                                                     \
    csrr t6, mepc;                                                      \
    SREG t6, REGBYTES(t0);                                              \
    csrr t6, mtval;                                                     \
    SREG t6, 2 * REGBYTES(t0);                                          \
    la t0, trap_expected;                                               \
    SREG zero, 0(t0);                                                   \
    csrr t6, mepc;                                                      \
    lhu t0, 0(t6);                                                      \
    andi t0, t0, 3;                                                     \
    addi t6, t6, 2;                                                     \
    li t5, 3;                                                           \
    bne t0, t5, 3f;                                                     \
    addi t6, t6, 2;                                                     \
3:  csrw mepc, t6;                                                      \
    csrr t0, mscratch;                                                  \
    mret;                                                               \
unexpected_trap:                                                        \
    la a1, msg_trap;                                                    \
    li a0, SYS_WRITE0;                                                  \
    SEMIHOST_CALL;                                                      \
    csrr a0, mcause;                                                    \
    jal print_decimal;                                                  \
    la a1, msg_nl;                                                      \
    li a0, SYS_WRITE0;                                                  \
    SEMIHOST_CALL;                                                      \
    li a0, 255;                                                         \
    j exit_with_a0

#define TEST_DATA                                                       \
    .section .rodata;                                                   \
msg_pass: .asciz "PASS\n";                                              \
msg_fail: .asciz "FAIL ";                                               \
msg_trap: .asciz "FAIL unexpected trap, mcause ";                       \
msg_nl: .asciz "\n";                                                    \
    .section .bss;                                                      \
    .balign 16;                                                         \
exit_block: .skip 2 * REGBYTES;                                         \
num_buf: .skip 32;                                                      \
trap_expected: .skip REGBYTES;                                          \
trap_cause: .skip 3 * REGBYTES;                                         \
    .text

/* ---- checks ---- */

/* Compare register reg with the immediate expected value. */
#define CHECK(n, reg, expected)     \
    li gp, n;                       \
    li t2, expected;                \
    bne reg, t2, fail

/* Run arbitrary code, then check reg. */
#define TEST_CASE(n, reg, expected, ...) \
    li gp, n;                            \
    __VA_ARGS__;                         \
    li t2, expected;                     \
    bne reg, t2, fail

/* Register-register op: a0 = a1 OP a2. */
#define TEST_RR(n, inst, expected, a, b) \
    TEST_CASE(n, a0, expected, li a1, a; li a2, b; inst a0, a1, a2)

/* Register-register op with the destination equal to the first source. */
#define TEST_RR_D1(n, inst, expected, a, b) \
    TEST_CASE(n, a1, expected, li a1, a; li a2, b; inst a1, a1, a2)

/* Register-register op writing x0: x0 must stay zero. */
#define TEST_RR_X0(n, inst, a, b) \
    TEST_CASE(n, x0, 0, li a1, a; li a2, b; inst x0, a1, a2)

/* Register-immediate op: a0 = a1 OP imm. */
#define TEST_RI(n, inst, expected, a, imm) \
    TEST_CASE(n, a0, expected, li a1, a; inst a0, a1, imm)

/* One-operand form: a0 = OP a1 (pseudo-instructions such as neg, not). */
#define TEST_R1(n, inst, expected, a) \
    TEST_CASE(n, a0, expected, li a1, a; inst a0, a1)

/* Load from label+offset; base register a1. */
#define TEST_LD(n, inst, expected, label, offset) \
    TEST_CASE(n, a0, expected, la a1, label; inst a0, offset(a1))

/* Store value to label+offset, load it back with load. */
#define TEST_ST(n, store, load, expected, value, label, offset) \
    TEST_CASE(n, a0, expected, la a1, label; li a2, value; store a2, offset(a1); load a0, offset(a1))

/* Branch taken / not taken. */
#define TEST_BR_TAKEN(n, inst, a, b) \
    li gp, n;                        \
    li a1, a;                        \
    li a2, b;                        \
    inst a1, a2, 1f;                 \
    j fail;                          \
1:

#define TEST_BR_NOT_TAKEN(n, inst, a, b) \
    li gp, n;                            \
    li a1, a;                            \
    li a2, b;                            \
    inst a1, a2, 1f;                     \
    j 2f;                                \
1:  j fail;                              \
2:

/* Code that must trap with the given mcause; mepc must point at the
 * instruction labelled 8 inside the code (write "8: insn"). */
#define TEST_TRAP(n, cause, ...)      \
    li gp, n;                         \
    la t0, trap_expected;             \
    li t1, 1;                         \
    SREG t1, 0(t0);                   \
    la t0, trap_cause;                \
    li t1, -1;                        \
    SREG t1, 0(t0);                   \
    __VA_ARGS__;                      \
    la t0, trap_cause;                \
    LREG t1, 0(t0);                   \
    li t2, cause;                     \
    bne t1, t2, fail;                 \
    LREG t1, REGBYTES(t0);            \
    la t2, 8b;                        \
    bne t1, t2, fail

/* The mtval that the last expected trap recorded must equal reg. */
#define CHECK_TVAL(n, reg)            \
    li gp, n;                         \
    la t0, trap_cause;                \
    LREG t1, 2 * REGBYTES(t0);        \
    bne t1, reg, fail

#endif
