/*
 * C extension: every compressed instruction of RV32C and RV64C, written
 * with explicit c.* mnemonics so that the compressed encoding is what runs,
 * and the encodings whose meaning depends on XLEN, given as raw halfwords:
 *
 *   halfword    RV32                      RV64
 *   0x2085      c.jal .+96                c.addiw ra, 1
 *   0x6588      c.flw fa0, 8(a1)          c.ld a0, 8(a1)
 *   0xe588      c.fsw fa0, 8(a1)          c.sd a0, 8(a1)
 *   0x6522      c.flwsp fa0, 8(sp)        c.ldsp a0, 8(sp)
 *   0xe42a      c.fswsp fa0, 8(sp)        c.sdsp a0, 8(sp)
 *   0x9d2d      reserved                  c.addw a0, a1
 *   0x9d0d      reserved                  c.subw a0, a1
 *
 * The F forms are illegal here (no F; QEMU's F unit is off at reset), so on
 * RV32 they trap with mcause 2, like the reserved encodings and 0x0000.
 */
#include "test.h"

/* Run one raw halfword that must trap as an illegal instruction. */
#define TEST_ILLEGAL16(n, hw) TEST_TRAP(n, 2, 8: .half hw)

TEST_BEGIN
    /* stack-pointer based */
    TEST_CASE(1, a0, 16, c.addi4spn a0, sp, 16; sub a0, a0, sp)
    TEST_CASE(2, a0, 1020, c.addi4spn a0, sp, 1020; sub a0, a0, sp)
    TEST_CASE(3, a0, -64, mv a1, sp; c.addi16sp sp, -64; sub a0, sp, a1; c.addi16sp sp, 64)
    TEST_CASE(4, a0, -16, mv a1, sp; c.addi16sp sp, -512; c.addi16sp sp, 496; sub a0, sp, a1; addi sp, sp, 16; sub t0, sp, a1; bnez t0, fail)
    TEST_CASE(5, a0, 0x5a5a, addi sp, sp, -16; li a1, 0x5a5a; c.swsp a1, 8(sp); c.lwsp a0, 8(sp); addi sp, sp, 16)
    TEST_CASE(6, a0, -1, addi sp, sp, -256; li a1, -1; c.swsp a1, 252(sp); c.lwsp a0, 252(sp); addi sp, sp, 256)
    /* register-based loads and stores (x8..x15) */
    TEST_CASE(7, a0, 0x12345678, la a1, cdata; c.lw a0, 0(a1))
    TEST_CASE(8, a0, XL(0x87654321, -0x789abcdf), la a1, cdata; c.lw a0, 4(a1))
    TEST_CASE(9, a0, 0x77, la a1, cscratch; li a2, 0x77; c.sw a2, 124(a1); lw a0, 124(a1))
    /* constants and immediates */
    TEST_CASE(10, a0, -32, c.li a0, -32)
    TEST_CASE(11, a0, 31, c.li a0, 31)
    TEST_CASE(12, a0, 0x1f000, c.lui a0, 0x1f)
    TEST_CASE(13, a0, XL(0xfffe0000, -0x20000), c.lui a0, 0xfffe0)
    TEST_CASE(14, a0, 2, li a0, 5; c.addi a0, -3)
    TEST_CASE(15, a0, 36, li a0, 5; c.addi a0, 31)
    TEST_CASE(16, a0, 5, li a0, 5; c.nop)
    TEST_CASE(17, a0, 0x28, li a0, 5; c.slli a0, 3)
    TEST_CASE(18, a0, XL(0x0fffffff, 0x0fffffffffffffff), li a0, -1; c.srli a0, 4)
    TEST_CASE(19, a0, -1, li a0, -16; c.srai a0, 4)
    TEST_CASE(20, s0, 0x40, li s0, 0x80; c.srai s0, 1)
    TEST_CASE(21, a0, -8, li a0, -1; c.andi a0, -8)
    TEST_CASE(22, a0, 0x1f, li a0, 0xff; c.andi a0, 31)
    /* register-register */
    TEST_CASE(23, a0, -2, li a0, 3; li a1, 5; c.sub a0, a1)
    TEST_CASE(24, a0, 6, li a0, 3; li a1, 5; c.xor a0, a1)
    TEST_CASE(25, a0, 7, li a0, 3; li a1, 5; c.or a0, a1)
    TEST_CASE(26, a0, 1, li a0, 3; li a1, 5; c.and a0, a1)
    TEST_CASE(27, a0, 5, li a1, 5; c.mv a0, a1)
    TEST_CASE(28, t6, 13, li t6, 8; li a5, 5; c.add t6, a5)
    /* control transfer */
    TEST_CASE(29, a0, 1, li a0, 1; c.j 1f; li a0, 2; 1: )
    TEST_CASE(30, a0, 1, li a0, 1; li a1, 0; c.beqz a1, 1f; li a0, 2; 1: )
    TEST_CASE(31, a0, 2, li a0, 1; li a1, 3; c.beqz a1, 1f; li a0, 2; 1: )
    TEST_CASE(32, a0, 1, li a0, 1; li a1, -3; c.bnez a1, 1f; li a0, 2; 1: )
    TEST_CASE(33, a0, 2, li a0, 1; li a1, 0; c.bnez a1, 1f; li a0, 2; 1: )
    TEST_CASE(34, a0, 3, la a1, 1f; li a0, 3; c.jr a1; li a0, 4; 1: )
    /* c.jalr links to the next (2-byte) instruction */
    TEST_CASE(35, a0, 0, la a1, 1f; 8: c.jalr a1; 1: la a2, 8b + 2; sub a0, ra, a2)
    /* backward c.bnez loop */
    TEST_CASE(36, a0, 7, li a0, 0; li a1, 7; 1: c.addi a0, 1; c.addi a1, -1; c.bnez a1, 1b)
    TEST_TRAP(37, 3, 8: c.ebreak)
    TEST_ILLEGAL16(38, 0x0000)
    /* c.fld needs D: illegal on both */
    TEST_ILLEGAL16(39, 0x2588)

    /* the same halfword 0x2085: RV32 c.jal .+96, RV64 c.addiw ra, ra, 1 */
    li gp, 40
    li ra, 0x7fffffff
    .option push
    .option norvc
8:  .half 0x2085
#if XLEN == 64
    li t2, -0x80000000
    bne ra, t2, fail
#else
    jal x0, fail
    .org 8b + 96
    la t2, 8b + 2
    bne ra, t2, fail
#endif
    .option pop

#if XLEN == 32
    /* RV32: c.jal links ra to the next instruction */
    TEST_CASE(41, a0, 0, 8: c.jal 1f; 1: la a1, 8b + 2; sub a0, ra, a1)
    /* the F-slot encodings trap; the RV64-only ALU forms are reserved */
    TEST_ILLEGAL16(42, 0x6588)
    TEST_ILLEGAL16(43, 0xe588)
    TEST_ILLEGAL16(44, 0x6522)
    TEST_ILLEGAL16(45, 0xe42a)
    TEST_ILLEGAL16(46, 0x9d2d)
    TEST_ILLEGAL16(47, 0x9d0d)
#else
    /* the same halfwords as RV64 integer instructions */
    TEST_CASE(42, a0, 0x13579bdf9abcdef0, la a1, cdata; .half 0x6588)
    TEST_CASE(43, a0, 0x0123456789abcdef, la a1, cdata; li a0, 0x0123456789abcdef; .half 0xe588; ld a0, 8(a1); sd zero, 8(a1))
    TEST_CASE(44, a0, 0x1122334455667788, addi sp, sp, -16; li a1, 0x1122334455667788; sd a1, 8(sp); .half 0x6522; addi sp, sp, 16)
    TEST_CASE(45, a1, -2, addi sp, sp, -16; li a0, -2; .half 0xe42a; ld a1, 8(sp); addi sp, sp, 16)
    TEST_CASE(46, a0, -0x80000000, li a0, 0x7fffffff; li a1, 1; .half 0x9d2d)
    TEST_CASE(47, a0, 0x7fffffff, li a0, 0x180000000; li a1, 1; .half 0x9d0d)
    /* and by mnemonic, with the 64-bit shift amounts */
    TEST_CASE(48, a0, -1, li a0, 0xffffffff; c.addiw a0, 0)
    TEST_CASE(49, a0, 0x10, li a0, 0xffffffff00000011; c.addiw a0, -1)
    TEST_CASE(50, a0, 0x8765432112345678, la a1, cdata; c.ld a0, 0(a1))
    TEST_CASE(51, a0, 0x55, la a1, cscratch; li a2, 0x55; c.sd a2, 248(a1); ld a0, 248(a1))
    TEST_CASE(52, a0, -3, addi sp, sp, -512; li a1, -3; c.sdsp a1, 504(sp); c.ldsp a0, 504(sp); addi sp, sp, 512)
    TEST_CASE(53, a0, 0x10000000000, li a0, 1; c.slli a0, 40)
    TEST_CASE(54, a0, 0xff, li a0, -1; c.srli a0, 56)
    TEST_CASE(55, a0, -1, li a0, 0x8000000000000000; c.srai a0, 63)
    TEST_CASE(56, a0, -2, li a0, 0x17fffffff; li a1, 0x7fffffff; c.addw a0, a1)
    TEST_CASE(57, a0, -0x80000000, li a0, 0x7fffffff; li a1, -1; c.subw a0, a1)
#endif
TEST_END

    .section .data
    .balign 16
cdata:
    .word 0x12345678, 0x87654321, 0x9abcdef0, 0x13579bdf
cscratch:
    .skip 256
