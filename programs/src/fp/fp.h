/*
 * fp.h: what the floating-point programs share beyond common.h.
 *
 * They print every result that matters as the bits of the IEEE-754 value in
 * hex, so that a comparison of outputs compares every bit, and they compute
 * in float on rv32imafc/ilp32f and in double on rv64gc/lp64d (real_t), so
 * each build exercises the F or the D extension in hardware registers.
 */
#ifndef RETRACE_PROGRAMS_FP_H
#define RETRACE_PROGRAMS_FP_H

#include "../common.h"
#include <stdint.h>
#include <string.h>

#if __riscv_flen == 64
typedef double real_t;
#define R(x) (x)
#else
typedef float real_t;
#define R(x) (x##f)
#endif

/* The bits of a float or a double, to print them. */
static inline uint32_t bits_f(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static inline uint64_t bits_d(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* A real_t printed as its bits: 8 hex digits for a float, 16 for a double. */
static inline void print_real(const char *label, real_t v)
{
    if (sizeof(real_t) == 8)
        printf("%s %016llx\n", label, (unsigned long long)bits_d((double)v));
    else
        printf("%s %08lx\n", label, (unsigned long)bits_f((float)v));
}

/* A uniform real in [-1, 1) from the program's generator. */
static inline real_t rng_real(rng_t *r)
{
    return (real_t)(int32_t)rng_next(r) * R(4.656612873077392578125e-10);
}

/* Fold a real's bits into a checksum. */
static inline uint32_t fnv_real(uint32_t h, real_t v)
{
    uint64_t b = sizeof(real_t) == 8 ? bits_d((double)v) : bits_f((float)v);
    for (int i = 0; i < (int)sizeof(real_t); i++) {
        h ^= (uint32_t)(b >> (8 * i)) & 0xff;
        h *= 16777619u;
    }
    return h;
}

#endif
