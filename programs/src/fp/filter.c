/*
 * filter: a 31-tap FIR low-pass filter (windowed sinc, coefficients computed
 * with picolibc's sin and cos) and a 4th-order IIR filter (two biquad
 * sections in direct form II transposed) over a noisy signal: multiply-add
 * chains, a circular delay line, feedback through state.
 *
 * Inputs: samples (default 20000), seed (default 3).
 * Output: a few output samples and the filters' energies as bits, then
 * "filter: checksum ..." over every output sample's bits.
 */
#include "fp.h"
#include <math.h>

#define TAPS 31

int main(int argc, char **argv)
{
    uint32_t n = arg_u32(argc, argv, 0, 20000);
    rng_t g;
    rng_seed(&g, arg_u32(argc, argv, 1, 3));

    real_t h[TAPS], line[TAPS] = {0};
    const real_t pi = R(3.14159265358979323846);
    real_t fc = R(0.125), gain = 0;
    for (int k = 0; k < TAPS; k++) {
        int m = k - TAPS / 2;
        real_t sinc = m == 0 ? 2 * fc : (real_t)sin((double)(2 * pi * fc * (real_t)m)) / (pi * (real_t)m);
        real_t hamming = R(0.54) - R(0.46) * (real_t)cos((double)(2 * pi * (real_t)k / (TAPS - 1)));
        h[k] = sinc * hamming;
        gain += h[k];
    }
    for (int k = 0; k < TAPS; k++)
        h[k] /= gain;

    /* Two biquads (b0 b1 b2 a1 a2), a Butterworth-like low pass. */
    static const real_t bq[2][5] = {
        {R(0.0200833), R(0.0401666), R(0.0200833), R(-1.5610181), R(0.6413515)},
        {R(0.0200833), R(0.0401666), R(0.0200833), R(-1.2796854), R(0.4776007)},
    };
    real_t z[2][2] = {{0}};

    uint32_t sum = 2166136261u;
    real_t efir = 0, eiir = 0;
    int pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        real_t t = (real_t)i;
        real_t x = (real_t)sin((double)(t * R(0.05))) + R(0.5) * (real_t)sin((double)(t * R(1.3))) + R(0.2) * rng_real(&g);
        /* FIR through a circular delay line. */
        line[pos] = x;
        real_t y = 0;
        int j = pos;
        for (int k = 0; k < TAPS; k++) {
            y += h[k] * line[j];
            j = j == 0 ? TAPS - 1 : j - 1;
        }
        pos = pos == TAPS - 1 ? 0 : pos + 1;
        /* IIR: two sections in cascade. */
        real_t v = x;
        for (int s = 0; s < 2; s++) {
            real_t out = bq[s][0] * v + z[s][0];
            z[s][0] = bq[s][1] * v - bq[s][3] * out + z[s][1];
            z[s][1] = bq[s][2] * v - bq[s][4] * out;
            v = out;
        }
        efir += y * y;
        eiir += v * v;
        sum = fnv_real(fnv_real(sum, y), v);
        if (i % (n / 4 + 1) == 0) {
            print_real("fir", y);
            print_real("iir", v);
        }
    }
    print_real("fir energy", efir);
    print_real("iir energy", eiir);
    return finish("filter", sum, 0);
}
