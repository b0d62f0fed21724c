/*
 * common.h: the few helpers every example program shares.
 *
 * All arithmetic that reaches the output is done in uint32_t so that every
 * build (rv32 or rv64, any optimisation level) prints the same bytes and exits
 * with the same code.
 *
 * Arguments: picolibc's semihosting start-up code puts a fixed "program-name"
 * in argv[0] and then splits the host's command line (SYS_GET_CMDLINE) on
 * spaces. QEMU's command line is its `arg=` values joined by spaces, or the
 * -kernel path when there are none, so the ELF path usually appears as
 * argv[1]. The programs therefore take their inputs from the *numeric*
 * arguments only, in order, and skip everything else.
 */
#ifndef RETRACE_PROGRAMS_COMMON_H
#define RETRACE_PROGRAMS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Parse a decimal (or 0x-prefixed hex) unsigned number; 0 if not numeric. */
static inline int parse_u32(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    uint32_t base = 10;
    if (s == 0 || *s == 0)
        return 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2] != 0) {
        base = 16;
        s += 2;
    }
    for (; *s; s++) {
        uint32_t d;
        if (*s >= '0' && *s <= '9')
            d = (uint32_t)(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = (uint32_t)(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = (uint32_t)(*s - 'A' + 10);
        else
            return 0;
        v = v * base + d;
    }
    *out = v;
    return 1;
}

/* The index-th numeric argument (0-based), or def when there is none. */
static inline uint32_t arg_u32(int argc, char **argv, int index, uint32_t def)
{
    int seen = 0;
    for (int i = 1; i < argc; i++) {
        uint32_t v;
        if (parse_u32(argv[i], &v)) {
            if (seen == index)
                return v;
            seen++;
        }
    }
    return def;
}

/* xorshift32 (Marsaglia 2003): small, fast, the same on every XLEN. */
typedef struct {
    uint32_t s;
} rng_t;

static inline void rng_seed(rng_t *r, uint32_t seed)
{
    r->s = seed ? seed : 0x9e3779b9u;
}

static inline uint32_t rng_next(rng_t *r)
{
    uint32_t x = r->s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    r->s = x;
    return x;
}

/* Uniform-ish value in [0, n) for n > 0 (uses the M extension's remu). */
static inline uint32_t rng_below(rng_t *r, uint32_t n)
{
    return rng_next(r) % n;
}

/* A running checksum: FNV-1a over 32-bit words. */
typedef struct {
    uint32_t h;
} sum_t;

static inline void sum_init(sum_t *c)
{
    c->h = 2166136261u;
}

static inline void sum_add(sum_t *c, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        c->h ^= (v >> (8 * i)) & 0xffu;
        c->h *= 16777619u;
    }
}

/*
 * Print "<name>: checksum xxxxxxxx" and return the exit code the program
 * ends with: 1 + the checksum's low 6 bits (1..64, never 0, so a runner that
 * loses the exit code shows), or 100 + why when a self-check failed.
 */
static inline int finish(const char *name, uint32_t checksum, int failed)
{
    printf("%s: checksum %08x\n", name, (unsigned)checksum);
    if (failed) {
        printf("%s: self-check FAILED (%d)\n", name, failed);
        return 100 + failed;
    }
    return 1 + (int)(checksum & 63u);
}

#endif
