/*
 * Control transfer and system instructions of I: every conditional branch
 * taken and not taken (signed and unsigned comparisons at the edges), jal and
 * jalr link values, jalr's cleared low target bit and sign-extended offset,
 * fence/fence.i, and the traps of ecall and ebreak (mcause, mepc).
 */
#include "test.h"

TEST_BEGIN
    TEST_BR_TAKEN(1, beq, 5, 5)
    TEST_BR_NOT_TAKEN(2, beq, 5, 6)
    TEST_BR_TAKEN(3, bne, 0, -1)
    TEST_BR_NOT_TAKEN(4, bne, -1, -1)
    TEST_BR_TAKEN(5, blt, -1, 0)
    TEST_BR_NOT_TAKEN(6, blt, 0, -1)
    TEST_BR_NOT_TAKEN(7, blt, 3, 3)
    TEST_BR_TAKEN(8, blt, XL(0x80000000, 0x8000000000000000), XL(0x7fffffff, 0x7fffffffffffffff))
    TEST_BR_TAKEN(9, bge, 0, -1)
    TEST_BR_TAKEN(10, bge, 3, 3)
    TEST_BR_NOT_TAKEN(11, bge, -2, -1)
    TEST_BR_TAKEN(12, bltu, 0, -1)
    TEST_BR_NOT_TAKEN(13, bltu, -1, 0)
    TEST_BR_NOT_TAKEN(14, bltu, 9, 9)
    TEST_BR_TAKEN(15, bgeu, -1, 0)
    TEST_BR_TAKEN(16, bgeu, 9, 9)
    TEST_BR_NOT_TAKEN(17, bgeu, 0, 1)
    /* a backward branch: loop 10 times */
    TEST_CASE(18, a0, 10, li a0, 0; li a1, 10; 1: addi a0, a0, 1; blt a0, a1, 1b)
    /* pseudo branches against zero */
    TEST_CASE(19, a0, 1, li a0, 1; li a1, -3; bltz a1, 1f; li a0, 2; 1: )
    TEST_CASE(20, a0, 1, li a0, 0; li a1, 3; bgtz a1, 1f; li a0, 2; 1: addi a0, a0, 1)
    TEST_CASE(21, a0, 0, li a0, 0; li a1, 0; bnez a1, 1f; j 2f; 1: li a0, 9; 2: )

    /* jal: link = address of the next instruction */
    TEST_CASE(22, a0, 0, .option push; .option norvc; jal a2, 1f; 8: nop; 1: la a0, 8b; sub a0, a0, a2; .option pop)
    TEST_CASE(23, x0, 0, jal x0, 1f; j fail; 1: )
    /* jalr: target = (rs1 + imm) & ~1, link written after reading rs1 */
    TEST_CASE(24, a0, 7, la a1, 1f; .option push; .option norvc; jalr a2, 0(a1); li a0, 1; 1: .option pop; li a0, 7)
    TEST_CASE(25, a0, 7, la a1, 1f + 1; jalr x0, 0(a1); j fail; 1: li a0, 7)
    TEST_CASE(26, a0, 7, la a1, 1f + 8; jalr x0, -8(a1); j fail; 1: li a0, 7)
    TEST_CASE(27, a0, 7, la a1, 1f - 3; jalr x0, 3(a1); j fail; 1: li a0, 7)
    TEST_CASE(28, a1, 0, .option push; .option norvc; la a1, 1f; jalr a1, 0(a1); 8: nop; 1: la a2, 8b; sub a1, a1, a2; .option pop)
    /* call / ret through a function */
    TEST_CASE(29, a0, 42, li a0, 41; call add_one)

    /* fences execute as no-ops here */
    TEST_CASE(30, a0, 3, li a0, 3; fence; fence rw, rw; fence r, w; fence.i; fence.tso)
    /* self-modifying code, made visible by fence.i */
    TEST_CASE(31, a0, 5, la a1, patch_me; li a2, 0x00500513; sw a2, 0(a1); fence.i; jal patch_me)

    /* ecall and ebreak trap to mtvec: mcause 11 (M-mode ecall), 3; mepc = the instruction */
    TEST_TRAP(32, 11, 8: ecall)
    TEST_TRAP(33, 3, .option push; .option norvc; 8: ebreak; .option pop)
    /* the handler skipped the instruction and returned here */
    TEST_CASE(34, a0, 1, li a0, 1)
TEST_END

    .text
add_one:
    addi a0, a0, 1
    ret

    .balign 4
    /* executed after being overwritten with "li a0, 5" (addi a0, x0, 5) */
patch_me:
    .option push
    .option norvc
    li a0, 9
    ret
    .option pop
