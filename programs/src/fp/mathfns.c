/*
 * mathfns: picolibc's math library across ranges, in float and in double:
 * sin, cos, exp, log, sqrt, pow, atan2 and fmod on values from tiny to huge,
 * negative, zero, infinite and NaN, each result printed as its bits so that
 * every bit is compared. The float functions use the F extension in every
 * build; the double ones use D on rv64gc and the soft-float library on
 * rv32imafc.
 *
 * Inputs: none. Output: one line per function and argument, then
 * "mathfns: checksum ...".
 */
#include "fp.h"
#include <math.h>

static uint32_t h = 2166136261u;

static void out_f(const char *fn, float x, float r)
{
    printf("%s(%08lx) = %08lx\n", fn, (unsigned long)bits_f(x), (unsigned long)bits_f(r));
    h = (h ^ bits_f(r)) * 16777619u;
}

static void out_d(const char *fn, double x, double r)
{
    printf("%s(%016llx) = %016llx\n", fn, (unsigned long long)bits_d(x),
           (unsigned long long)bits_d(r));
    h = (h ^ (uint32_t)bits_d(r) ^ (uint32_t)(bits_d(r) >> 32)) * 16777619u;
}

static const double X[] = {
    0.0, -0.0, 1e-310, 1e-30, 0.5, 1.0, -1.0, 2.0, 3.14159265358979, -2.5, 10.0, 88.5,
    100.0, 709.0, 1e10, -1e10, 1e300, 3e38, -745.5, INFINITY, -INFINITY, NAN,
};
#define NX (sizeof X / sizeof X[0])

int main(void)
{
    for (unsigned i = 0; i < NX; i++) {
        double d = X[i];
        float f = (float)d;
        out_f("sinf", f, sinf(f));
        out_f("cosf", f, cosf(f));
        out_f("expf", f, expf(f));
        out_f("logf", f, logf(f));
        out_f("sqrtf", f, sqrtf(f));
        out_f("powf", f, powf(f, 1.5f));
        out_f("atan2f", f, atan2f(f, -0.75f));
        out_f("fmodf", f, fmodf(f, 0.7f));
        out_d("sin", d, sin(d));
        out_d("cos", d, cos(d));
        out_d("exp", d, exp(d));
        out_d("log", d, log(d));
        out_d("sqrt", d, sqrt(d));
        out_d("pow", d, pow(d, 1.5));
        out_d("atan2", d, atan2(d, -0.75));
        out_d("fmod", d, fmod(d, 0.7));
    }
    /* A sweep: sin and exp over a range, accumulated. */
    real_t acc = 0;
    for (int i = -2000; i < 2000; i++) {
        real_t t = (real_t)i * R(0.013);
        acc += (real_t)sin((double)t) * (real_t)exp((double)(t * R(0.001))) + (real_t)sqrt((double)(t * t));
        acc = (real_t)fmod((double)acc, 1000.0);
    }
    print_real("sweep", acc);
    return finish("mathfns", h, 0);
}
