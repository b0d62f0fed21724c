/*
 * fft: an in-place radix-2 complex FFT (iterative, bit-reversed order, the
 * twiddles from picolibc's sin/cos), forward then inverse, over random
 * signals: butterflies of multiply-adds, strided access, a round trip
 * whose error is checked.
 *
 * Inputs: log2 of the size (default 10), rounds (default 8), seed (default 5).
 * Output: a few spectrum bins and the round-trip error as bits, then
 * "fft: checksum ..." over every spectrum value's bits.
 */
#include "fp.h"
#include <math.h>

#define MAXLOG 14

static real_t re[1 << MAXLOG], im[1 << MAXLOG], keep[1 << MAXLOG];

static void fft(int logn, int inverse)
{
    int n = 1 << logn;
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            real_t t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        double ang = 2 * 3.14159265358979323846 / len * (inverse ? 1 : -1);
        real_t wr = (real_t)cos(ang), wi = (real_t)sin(ang);
        for (int i = 0; i < n; i += len) {
            real_t ur = 1, ui = 0;
            for (int k = 0; k < len / 2; k++) {
                int a = i + k, b = i + k + len / 2;
                real_t tr = re[b] * ur - im[b] * ui;
                real_t ti = re[b] * ui + im[b] * ur;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
                real_t nr = ur * wr - ui * wi;
                ui = ur * wi + ui * wr;
                ur = nr;
            }
        }
    }
    if (inverse)
        for (int i = 0; i < n; i++) {
            re[i] /= (real_t)n;
            im[i] /= (real_t)n;
        }
}

int main(int argc, char **argv)
{
    int logn = (int)arg_u32(argc, argv, 0, 10);
    uint32_t rounds = arg_u32(argc, argv, 1, 8);
    rng_t g;
    rng_seed(&g, arg_u32(argc, argv, 2, 5));
    if (logn < 1 || logn > MAXLOG)
        logn = 10;
    int n = 1 << logn;
    uint32_t sum = 2166136261u;
    real_t worst = 0;
    for (uint32_t r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            re[i] = keep[i] = rng_real(&g) + (real_t)sin(0.1 * i * (r + 1));
            im[i] = 0;
        }
        fft(logn, 0);
        for (int i = 0; i < n; i++)
            sum = fnv_real(fnv_real(sum, re[i]), im[i]);
        if (r == 0)
            for (int i = 0; i < n; i += n / 4) {
                print_real("re", re[i]);
                print_real("im", im[i]);
            }
        fft(logn, 1);
        for (int i = 0; i < n; i++) {
            real_t e = (real_t)fabs((double)(re[i] - keep[i]));
            if (e > worst)
                worst = e;
        }
    }
    print_real("round-trip error", worst);
    return finish("fft", sum, worst > R(1e-3));
}
