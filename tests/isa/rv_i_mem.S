/*
 * Loads and stores of I (and RV64I's lwu/ld/sd): every width, sign and
 * zero extension, positive and negative offsets, x0 as destination, and
 * misaligned accesses.
 *
 * Misaligned loads and stores: QEMU's virt machine (7.2, M-mode) performs
 * them as ordinary little-endian accesses without trapping; retrace does
 * the same. The checks below pin that behaviour down, including accesses
 * that straddle an 8-byte boundary.
 */
#include "test.h"

TEST_BEGIN
    TEST_LD(1, lb, -1, data, 0)
    TEST_LD(2, lb, 0x7f, data, 1)
    TEST_LD(3, lbu, 0xff, data, 0)
    TEST_LD(4, lbu, 0x80, data, 2)
    TEST_LD(5, lb, -0x80, data, 2)
    TEST_LD(6, lh, 0x7fff, data, 4)
    TEST_LD(7, lh, -0x7ff0, data, 6)
    TEST_LD(8, lhu, 0x8010, data, 6)
    TEST_LD(9, lw, 0x12345678, data, 8)
    TEST_LD(10, lw, XL(0x87654321, -0x789abcdf), data, 12)
    TEST_LD(11, lb, 0x12, data_end, -5)
    TEST_LD(12, lh, 0x5678, data_end, -8)
    TEST_CASE(13, x0, 0, la a1, data; lw x0, 8(a1))
    /* a store of each width only changes its bytes */
    TEST_ST(14, sb, lw, 0x123456aa, 0xaa, scratch, 0)
    TEST_ST(15, sh, lw, 0x1234bbcc, 0xbbcc, scratch, 0)
    TEST_ST(16, sb, lb, -2, 0xfe, scratch, 3)
    TEST_CASE(17, a0, XL(0xfe34bbcc, -0x1cb4434), la a1, scratch; lw a0, 0(a1))
    TEST_ST(18, sw, lw, -1, -1, scratch, 4)
    TEST_ST(19, sh, lhu, 0x1, 0x10001, scratch, -2 + 4)
    TEST_ST(20, sw, lw, 0x7abcdef0, 0x7abcdef0, scratch, 8)
    TEST_CASE(21, a0, 0x7abcdef0, la a1, scratch + 0x10; lw a0, -8(a1))

    /* misaligned loads (data bytes: ff 7f 80 00 ff 7f 10 80 | 78 56 34 12 21 43 65 87) */
    TEST_LD(30, lh, -0x7f81, data, 1)       /* bytes 7f 80 */
    TEST_LD(31, lhu, 0x807f, data, 1)
    TEST_LD(32, lw, XL(0xff00807f, -0xff7f81), data, 1)    /* bytes 7f 80 00 ff */
    TEST_LD(33, lw, 0x7880107f, data, 5)    /* straddles an 8-byte boundary */
    TEST_LD(34, lw, 0x56788010, data, 6)
    TEST_LD(35, lh, 0x7880, data, 7)
    /* misaligned stores, read back aligned */
    TEST_CASE(36, a0, XL(0xaabbcc11, -0x554433ef), la a1, scratch; li a2, 0x11111111; sw a2, 0(a1); li a2, 0xaabbcc; sw a2, 1(a1); lw a0, 0(a1))
    TEST_CASE(37, a0, 0xcd00, la a1, scratch; sw zero, 0(a1); li a2, 0xabcd; sh a2, 1(a1); lw a0, 0(a1); li t1, 0xabcd00; bne a0, t1, fail; lhu a0, 0(a1))
    TEST_CASE(38, a0, 0x44332211, la a1, scratch; sw zero, 4(a1); sw zero, 8(a1); li a2, 0x44332211; sw a2, 6(a1); lhu a3, 4(a1); bnez a3, fail; lw a0, 6(a1))
    TEST_CASE(39, a0, 0x4433, la a1, scratch; lhu a0, 8(a1))

#if XLEN == 64
    TEST_LD(50, lwu, 0x87654321, data, 12)
    TEST_LD(51, lw, -0x789abcdf, data, 12)
    TEST_LD(52, ld, 0x8765432112345678, data, 8)
    TEST_LD(53, ld, 0x80107fff00807fff, data, 0)
    TEST_ST(54, sd, ld, 0x0123456789abcdef, 0x0123456789abcdef, scratch, 16)
    TEST_ST(55, sw, ld, 0x0123456700000001, 1, scratch, 16)
    TEST_CASE(56, a0, 0x89abcdef01234567, la a1, scratch; li a2, 0x89abcdef01234567; sd a2, 3(a1); ld a0, 3(a1))
    TEST_CASE(57, a0, 0x89abcdef, la a1, scratch; lwu a0, 7(a1))
    TEST_CASE(58, a0, 0x23456789abcdef00, la a1, scratch; sd zero, 0(a1); sd zero, 8(a1); li a2, 0x89abcdef; sw a2, 1(a1); li a2, 0x01234567; sw a2, 5(a1); ld a0, 0(a1))
#endif
TEST_END

    .section .data
    .balign 16
data:
    .byte 0xff, 0x7f, 0x80, 0x00
    .half 0x7fff, 0x8010
    .word 0x12345678, 0x87654321
data_end:
    .balign 16
scratch:
    .word 0x12345678, 0, 0, 0, 0, 0, 0, 0
