/*
 * nqueens: counts the solutions of the N-queens problem by recursive
 * backtracking over bit masks, finds the first solution with a second,
 * array-based search that returns as soon as it succeeds, and checks the
 * counts against the known values.
 *
 * Exercises: recursion, early return and break out of loops, data-dependent
 * branches, bit manipulation.
 *
 * Arguments: [n = 11] [first-solution boards up to = 12]
 */
#include "common.h"

#define MAXN 16

static uint32_t count_bits(uint32_t cols, uint32_t d1, uint32_t d2, uint32_t all)
{
    if (cols == all)
        return 1;
    uint32_t total = 0;
    uint32_t free_ = ~(cols | d1 | d2) & all;
    while (free_) {
        uint32_t bit = free_ & (0u - free_);
        free_ -= bit;
        total += count_bits(cols | bit, ((d1 | bit) << 1) & all, (d2 | bit) >> 1, all);
    }
    return total;
}

static int pos[MAXN];

static int safe(int row, int col)
{
    for (int r = 0; r < row; r++) {
        int c = pos[r];
        if (c == col || c - col == row - r || col - c == row - r)
            return 0;
    }
    return 1;
}

/* First solution in lexicographic order; returns 1 when found. */
static int first(int row, int n, uint32_t *tries)
{
    if (row == n)
        return 1;
    for (int col = 0; col < n; col++) {
        ++*tries;
        if (!safe(row, col))
            continue;
        pos[row] = col;
        if (first(row + 1, n, tries))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t known[MAXN + 1] = { 1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724,
                                              2680, 14200, 73712, 365596, 2279184, 14772512 };
    int n = (int)arg_u32(argc, argv, 0, 11);
    int upto = (int)arg_u32(argc, argv, 1, 12);
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    if (n < 1 || n > MAXN)
        n = 8;
    if (upto > MAXN)
        upto = MAXN;
    for (int k = 1; k <= n; k++) {
        uint32_t all = (1u << k) - 1u;
        uint32_t c = count_bits(0, 0, 0, all);
        sum_add(&sum, c);
        if (c != known[k])
            failed = 1;
        if (k == n)
            printf("nqueens: %d queens: %u solutions\n", k, (unsigned)c);
    }
    for (int k = 4; k <= upto; k++) {
        uint32_t tries = 0;
        if (!first(0, k, &tries)) {
            failed = 2;
            break;
        }
        uint32_t code = 0;
        for (int r = 0; r < k; r++)
            code = code * (uint32_t)k + (uint32_t)pos[r];
        sum_add(&sum, code);
        sum_add(&sum, tries);
        printf("nqueens: first %d-queens solution after %u tries:", k, (unsigned)tries);
        for (int r = 0; r < k; r++)
            printf(" %d", pos[r]);
        printf("\n");
    }
    return finish("nqueens", sum.h, failed);
}
