/*
 * lusolve: solve dense linear systems A x = b by LU decomposition with
 * partial pivoting (Doolittle, in place), forward and back substitution,
 * then the residual |A x - b|: row swaps chosen by data, divisions by
 * pivots, fabs comparisons.
 *
 * Inputs: order (default 48), systems (default 4), seed (default 13).
 * Output: the first solution components and the worst residual as bits,
 * then "lusolve: checksum ..." over every solution's bits.
 */
#include "fp.h"
#include <math.h>

#define MAXN 96

static real_t a[MAXN][MAXN], lu[MAXN][MAXN], b[MAXN], x[MAXN];
static int piv[MAXN];

int main(int argc, char **argv)
{
    int n = (int)arg_u32(argc, argv, 0, 48);
    uint32_t systems = arg_u32(argc, argv, 1, 4);
    rng_t g;
    rng_seed(&g, arg_u32(argc, argv, 2, 13));
    if (n < 2 || n > MAXN)
        n = 48;
    uint32_t sum = 2166136261u;
    real_t worst = 0;
    for (uint32_t s = 0; s < systems; s++) {
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++)
                lu[i][j] = a[i][j] = rng_real(&g) + (i == j ? R(0.1) * (real_t)s : 0);
            b[i] = rng_real(&g);
            piv[i] = i;
        }
        for (int k = 0; k < n; k++) {
            int p = k;
            for (int i = k + 1; i < n; i++)
                if (fabs((double)lu[i][k]) > fabs((double)lu[p][k]))
                    p = i;
            if (p != k) {
                for (int j = 0; j < n; j++) {
                    real_t t = lu[k][j]; lu[k][j] = lu[p][j]; lu[p][j] = t;
                }
                int t = piv[k]; piv[k] = piv[p]; piv[p] = t;
            }
            for (int i = k + 1; i < n; i++) {
                real_t f = lu[i][k] /= lu[k][k];
                for (int j = k + 1; j < n; j++)
                    lu[i][j] -= f * lu[k][j];
            }
        }
        for (int i = 0; i < n; i++) {
            real_t v = b[piv[i]];
            for (int j = 0; j < i; j++)
                v -= lu[i][j] * x[j];
            x[i] = v;
        }
        for (int i = n - 1; i >= 0; i--) {
            real_t v = x[i];
            for (int j = i + 1; j < n; j++)
                v -= lu[i][j] * x[j];
            x[i] = v / lu[i][i];
        }
        for (int i = 0; i < n; i++) {
            real_t r = -b[i];
            for (int j = 0; j < n; j++)
                r += a[i][j] * x[j];
            if (fabs((double)r) > worst)
                worst = (real_t)fabs((double)r);
            sum = fnv_real(sum, x[i]);
        }
        if (s == 0)
            for (int i = 0; i < 3; i++)
                print_real("x", x[i]);
    }
    print_real("worst residual", worst);
    return finish("lusolve", sum, worst > R(1e-2));
}
