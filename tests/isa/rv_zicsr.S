/*
 * Zicsr: all six CSR instructions (csrrw, csrrs, csrrc and their immediate
 * forms) with the x0 rules: rd = x0 means no read side effects are needed;
 * csrrs/csrrc with rs1 = x0 and the immediate forms with uimm = 0 do not
 * write, so they are legal on read-only CSRs, while any write to a
 * read-only CSR (mhartid, the user counters) is an illegal instruction.
 * Also the machine information CSRs and the counters that programs read.
 */
#include "test.h"

#define MSTATUS_MIE 0x8
#define MSTATUS_MPIE 0x80

TEST_BEGIN
    /* csrrw: old value out, new value in; rd = rs1 swaps */
    TEST_CASE(1, a0, 0, csrw mscratch, zero; li a1, 0x1234; csrrw a0, mscratch, a1)
    TEST_CASE(2, a0, 0x1234, csrr a0, mscratch)
    TEST_CASE(3, a0, 0x1234, li a0, 0x55; csrrw a0, mscratch, a0)
    TEST_CASE(4, a0, 0x55, csrrw x0, mscratch, zero; li a0, 0x55; csrr a1, mscratch; bnez a1, fail)
    TEST_CASE(5, a0, -1, li a1, -1; csrw mscratch, a1; csrr a0, mscratch)
    /* csrrs / csrrc */
    TEST_CASE(6, a0, 0xf0, li a1, 0xf0; csrw mscratch, a1; li a2, 0x0f; csrrs a0, mscratch, a2)
    TEST_CASE(7, a0, 0xff, csrr a0, mscratch)
    TEST_CASE(8, a0, 0xff, li a2, 0x3c; csrrc a0, mscratch, a2)
    TEST_CASE(9, a0, 0xc3, csrr a0, mscratch)
    TEST_CASE(10, a0, 0xc3, csrrs a0, mscratch, x0)
    TEST_CASE(11, a0, 0xc3, csrrc a0, mscratch, x0)
    TEST_CASE(12, a0, 0xc3, csrrs x0, mscratch, x0; csrr a0, mscratch)
    TEST_CASE(13, a0, 0xc3 | 0x100, li a1, 0x100; csrs mscratch, a1; csrr a0, mscratch)
    TEST_CASE(14, a0, 0x100, li a1, 0xc3; csrc mscratch, a1; csrr a0, mscratch)
    /* immediate forms: uimm is 5 bits, zero-extended */
    TEST_CASE(15, a0, 0x100, csrrwi a0, mscratch, 31)
    TEST_CASE(16, a0, 31, csrr a0, mscratch)
    TEST_CASE(17, a0, 31, csrrci a0, mscratch, 0x11)
    TEST_CASE(18, a0, 0x0e, csrrsi a0, mscratch, 0)
    TEST_CASE(19, a0, 0x0e, csrrci a0, mscratch, 0)
    TEST_CASE(20, a0, 0x0f, csrrsi x0, mscratch, 1; csrr a0, mscratch)
    TEST_CASE(21, a0, 0x0d, csrci mscratch, 2; csrr a0, mscratch)
    TEST_CASE(22, a0, 0x1d, csrsi mscratch, 0x10; csrr a0, mscratch)
    TEST_CASE(23, a0, 0x0, csrwi mscratch, 0; csrr a0, mscratch)
    TEST_CASE(24, a0, 0x1f, csrwi mscratch, 0x1f; csrrwi x0, mscratch, 3; csrrwi a0, mscratch, 0; li t0, 3; bne a0, t0, fail; li a0, 0x1f)

    /* machine information */
    TEST_CASE(30, a0, 0, csrr a0, mhartid)
    TEST_CASE(31, a0, XL(1, 2), csrr a0, misa; srli a0, a0, XLEN - 2)
    TEST_CASE(32, a0, 0x1105, csrr a0, misa; li a1, 0x1105; and a0, a0, a1)  /* A, C, I, M */
    /* reading read-only CSRs without writing is legal */
    TEST_CASE(33, a0, 0, csrrs a0, mhartid, x0)
    TEST_CASE(34, a0, 0, csrrsi a0, mhartid, 0)
    TEST_CASE(35, a0, 0, csrrci a0, mhartid, 0)
    TEST_CASE(36, a0, 0, csrrc a0, mhartid, x0)
    /* writing them is not: mcause 2, mepc at the instruction */
    TEST_TRAP(37, 2, li a1, 5; 8: csrrw a0, mhartid, a1)
    TEST_TRAP(38, 2, 8: csrrwi x0, mhartid, 0)
    TEST_TRAP(39, 2, li a1, 1; 8: csrrs a0, mhartid, a1)
    TEST_TRAP(40, 2, 8: csrrsi a0, mhartid, 1)
    TEST_TRAP(41, 2, 8: csrrci a0, mhartid, 4)
    TEST_TRAP(42, 2, li a1, 1; 8: csrw cycle, a1)
    TEST_TRAP(43, 2, li a1, 1; 8: csrw instret, a1)

    /* trap setup and handling CSRs hold what was written */
    TEST_CASE(44, a0, 0, la a1, trap_entry; csrr a0, mtvec; sub a0, a0, a1)
    TEST_CASE(45, a0, 0x80001234, li a1, 0x80001234; csrw mepc, a1; csrr a0, mepc)
    TEST_CASE(46, a0, MSTATUS_MIE, csrci mstatus, MSTATUS_MIE; csrsi mstatus, MSTATUS_MIE; csrr a0, mstatus; andi a0, a0, MSTATUS_MIE)
    TEST_CASE(47, a0, 0, csrci mstatus, MSTATUS_MIE; csrr a0, mstatus; andi a0, a0, MSTATUS_MIE)
    /* after a trap and mret: MPIE set, MIE restored from it */
    TEST_TRAP(48, 11, 8: ecall)
    TEST_CASE(49, a0, MSTATUS_MPIE, csrr a0, mstatus; andi a0, a0, MSTATUS_MPIE)
    TEST_CASE(50, a0, 11, csrr a0, mcause)

    /* counters: they count up, the user aliases are readable in M-mode */
    TEST_CASE(51, a0, 1, csrr a1, minstret; nop; nop; csrr a2, minstret; sltu a0, a1, a2)
    TEST_CASE(52, a0, 1, csrr a1, mcycle; nop; nop; csrr a2, mcycle; sltu a0, a1, a2)
    TEST_CASE(53, a0, 1, rdinstret a1; nop; rdinstret a2; sltu a0, a1, a2)
    TEST_CASE(54, a0, 1, rdcycle a1; nop; rdcycle a2; sltu a0, a1, a2)
    TEST_CASE(55, a0, 0, rdtime a1; li a0, 0)
#if XLEN == 32
    TEST_CASE(56, a0, 0, rdinstreth a1; rdcycleh a1; rdtimeh a1; csrr a1, minstreth; csrr a1, mcycleh; li a0, 0)
#endif
TEST_END
