/*
 * matmul: integer matrix multiplication with compile-time sizes, in the
 * plain i-j-k order and in a transposed order, repeated.
 *
 * Exercises: loops with constant trip counts (the inner loops' bounds are
 * constants of the whole program), nested loops, integer multiply.
 *
 * Arguments: [repeats = 80] [seed = 7]
 */
#include "common.h"

#define N 32

static uint32_t a[N][N], b[N][N], bt[N][N], c[N][N];

static void fill(uint32_t m[N][N], rng_t *rng)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            m[i][j] = rng_next(rng) & 0xffffu;
}

static void multiply(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            uint32_t s = 0;
            for (int k = 0; k < N; k++)
                s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
}

static void transpose_b(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            bt[j][i] = b[i][j];
}

static void multiply_transposed(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            uint32_t s = 0;
            for (int k = 0; k < N; k++)
                s += a[i][k] * bt[j][k];
            c[i][j] ^= s;
        }
}

/* Trace of c, and a mix of all entries. */
static uint32_t digest(void)
{
    uint32_t h = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            h = h * 31u + c[i][j];
    return h;
}

int main(int argc, char **argv)
{
    uint32_t repeats = arg_u32(argc, argv, 0, 80);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 1, 7));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    for (uint32_t r = 0; r < repeats; r++) {
        if (r % 8 == 0) {
            fill(a, &rng);
            fill(b, &rng);
        } else {
            /* feed the result back so the work cannot be skipped */
            for (int i = 0; i < N; i++)
                a[i][(i + (int)r) % N] ^= c[i][i] & 0xffu;
        }
        multiply();
        transpose_b();
        multiply_transposed();
        /* both orders compute the same product: c ^ c == 0 */
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                if (c[i][j] != 0)
                    failed = 1;
        multiply();
        sum_add(&sum, digest());
    }
    printf("matmul: %ux%u, %u repeats\n", (unsigned)N, (unsigned)N, (unsigned)repeats);
    printf("matmul: c[0][0]=%u c[%u][%u]=%u\n", (unsigned)c[0][0], (unsigned)(N - 1),
           (unsigned)(N - 1), (unsigned)c[N - 1][N - 1]);
    return finish("matmul", sum.h, failed);
}
