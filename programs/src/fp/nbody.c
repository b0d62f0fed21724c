/*
 * nbody: gravitational n-body steps (leapfrog, softened forces) for a few
 * bodies on random orbits: an O(n^2) force loop with divisions and square
 * roots, energy computed before and after.
 *
 * Inputs: bodies (default 24), steps (default 200), seed (default 9).
 * Output: the energies and a body's position as bits, then
 * "nbody: checksum ..." over the final positions' bits.
 */
#include "fp.h"
#include <math.h>

#define MAXB 64

static real_t px[MAXB], py[MAXB], pz[MAXB], vx[MAXB], vy[MAXB], vz[MAXB], m[MAXB];

static real_t energy(int n)
{
    real_t e = 0;
    for (int i = 0; i < n; i++) {
        e += R(0.5) * m[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]);
        for (int j = i + 1; j < n; j++) {
            real_t dx = px[i] - px[j], dy = py[i] - py[j], dz = pz[i] - pz[j];
            e -= m[i] * m[j] / (real_t)sqrt((double)(dx * dx + dy * dy + dz * dz + R(0.01)));
        }
    }
    return e;
}

int main(int argc, char **argv)
{
    int n = (int)arg_u32(argc, argv, 0, 24);
    uint32_t steps = arg_u32(argc, argv, 1, 200);
    rng_t g;
    rng_seed(&g, arg_u32(argc, argv, 2, 9));
    if (n < 2 || n > MAXB)
        n = 24;
    for (int i = 0; i < n; i++) {
        px[i] = rng_real(&g) * 10;
        py[i] = rng_real(&g) * 10;
        pz[i] = rng_real(&g);
        vx[i] = -py[i] * R(0.05);
        vy[i] = px[i] * R(0.05);
        vz[i] = 0;
        m[i] = R(0.5) + (rng_real(&g) + 1) * R(0.25);
    }
    real_t e0 = energy(n);
    const real_t dt = R(0.01);
    for (uint32_t s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            real_t ax = 0, ay = 0, az = 0;
            for (int j = 0; j < n; j++) {
                if (j == i)
                    continue;
                real_t dx = px[j] - px[i], dy = py[j] - py[i], dz = pz[j] - pz[i];
                real_t d2 = dx * dx + dy * dy + dz * dz + R(0.01);
                real_t inv = 1 / (d2 * (real_t)sqrt((double)d2));
                ax += m[j] * dx * inv;
                ay += m[j] * dy * inv;
                az += m[j] * dz * inv;
            }
            vx[i] += ax * dt;
            vy[i] += ay * dt;
            vz[i] += az * dt;
        }
        for (int i = 0; i < n; i++) {
            px[i] += vx[i] * dt;
            py[i] += vy[i] * dt;
            pz[i] += vz[i] * dt;
        }
    }
    real_t e1 = energy(n);
    uint32_t sum = 2166136261u;
    for (int i = 0; i < n; i++)
        sum = fnv_real(fnv_real(fnv_real(sum, px[i]), py[i]), pz[i]);
    print_real("energy before", e0);
    print_real("energy after", e1);
    print_real("x0", px[0]);
    print_real("y0", py[0]);
    real_t drift = (real_t)fabs((double)((e1 - e0) / e0));
    print_real("relative drift", drift);
    return finish("nbody", sum, drift > R(0.1));
}
