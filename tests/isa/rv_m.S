/*
 * M extension: multiply (low, and high with every signedness), divide and
 * remainder, with the architected results for division by zero (quotient
 * all ones, remainder = dividend) and signed overflow (MIN / -1 = MIN,
 * MIN % -1 = 0), and RV64M's *W forms (32-bit operands taken from the low
 * bits, results sign-extended).
 */
#include "test.h"

#define MIN XL(0x80000000, 0x8000000000000000)
#define MAX XL(0x7fffffff, 0x7fffffffffffffff)

TEST_BEGIN
    TEST_RR(1, mul, 21, 3, 7)
    TEST_RR(2, mul, 1, -1, -1)
    TEST_RR(3, mul, -21, -3, 7)
    TEST_RR(4, mul, MIN, MIN, -1)
    TEST_RR(5, mul, XL(0x80000000, -0x80000000), 0x80000000, -1)
    TEST_RR(6, mul, XL(0xfffe0001 - 0x100000000, 0xfffe0001), 0xffff, 0xffff)
    TEST_RR_D1(7, mul, 600, 20, 30)
    TEST_RR_X0(8, mul, 3, 5)

    TEST_RR(9, mulh, XL(0x40000000, 0x4000000000000000), MIN, MIN)
    TEST_RR(10, mulh, 0, -1, -1)
    TEST_RR(11, mulh, -1, -1, 1)
    TEST_RR(12, mulh, XL(0x3fffffff, 0x3fffffffffffffff), MAX, MAX)
    TEST_RR(13, mulh, 0, 3, 7)
    TEST_RR(14, mulh, -1, MIN, 1)

    TEST_RR(15, mulhu, -2, -1, -1)
    TEST_RR(16, mulhu, 0, 3, 7)
    TEST_RR(17, mulhu, XL(0x40000000, 0x4000000000000000), MIN, MIN)
    TEST_RR(18, mulhu, 1, MIN, 2)

    TEST_RR(19, mulhsu, -1, -1, -1)
    TEST_RR(20, mulhsu, -1, -1, 1)
    TEST_RR(21, mulhsu, 0, 1, -1)
    TEST_RR(22, mulhsu, MIN, MIN, -1)
    TEST_RR(23, mulhsu, 0, 3, 7)

    TEST_RR(24, div, 3, 20, 6)
    TEST_RR(25, div, -3, -20, 6)
    TEST_RR(26, div, -3, 20, -6)
    TEST_RR(27, div, 3, -20, -6)
    TEST_RR(28, div, -1, 20, 0)
    TEST_RR(29, div, -1, -20, 0)
    TEST_RR(30, div, MIN, MIN, -1)
    TEST_RR(31, div, 0, 0, 0 + 5)
    TEST_RR(32, divu, 3, 20, 6)
    TEST_RR(33, divu, MAX, -1, 2)
    TEST_RR(34, divu, -1, 20, 0)
    TEST_RR(35, divu, -1, 0, 0)
    TEST_RR(36, divu, 0, MIN, -1)
    TEST_RR(37, divu, 1, -1, -1)

    TEST_RR(38, rem, 2, 20, 6)
    TEST_RR(39, rem, -2, -20, 6)
    TEST_RR(40, rem, 2, 20, -6)
    TEST_RR(41, rem, -2, -20, -6)
    TEST_RR(42, rem, 20, 20, 0)
    TEST_RR(43, rem, -20, -20, 0)
    TEST_RR(44, rem, 0, MIN, -1)
    TEST_RR(45, remu, 2, 20, 6)
    TEST_RR(46, remu, 5, -1, 10)
    TEST_RR(47, remu, -20, -20, 0)
    TEST_RR(48, remu, MIN, MIN, -1)
    TEST_RR_X0(49, div, 7, 0)
    TEST_RR_D1(50, remu, 1, 7, 3)

#if XLEN == 64
    TEST_RR(100, mulw, -2, 0x7fffffff, 2)
    TEST_RR(101, mulw, 15, 0x100000003, 5)
    TEST_RR(102, mulw, -0x80000000, 0x80000000, 1)
    TEST_RR(103, mulw, 0, 0x10000, 0x10000)
    TEST_RR(104, divw, -3, -20, 6)
    TEST_RR(105, divw, -3, 0x1fffffff6, 3)
    TEST_RR(106, divw, -1, 20, 0)
    TEST_RR(107, divw, -1, 20, 0x100000000)
    TEST_RR(108, divw, -0x80000000, 0x80000000, -1)
    TEST_RR(109, divuw, 0x7fffffff, 0xffffffff, 2)
    TEST_RR(110, divuw, -1, -1, 1)
    TEST_RR(111, divuw, -1, 5, 0)
    TEST_RR(112, divuw, 1, 0x180000000, 0x80000000)
    TEST_RR(113, remw, -2, -20, 6)
    TEST_RR(114, remw, -0x80000000, 0x180000000, 0)
    TEST_RR(115, remw, 0, 0x80000000, -1)
    TEST_RR(116, remw, 7, 0x700000007, 0)
    TEST_RR(117, remuw, 5, 0xffffffff, 10)
    TEST_RR(118, remuw, 7, 0x100000007, 0)
    TEST_RR(119, remuw, -0x80000000, 0x80000000, 0)
    TEST_RR(120, remuw, 0, 0x80000000, 0x80000000)
    TEST_RR_X0(121, divw, 1, 0)
#endif
TEST_END
