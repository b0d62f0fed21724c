/*
 * sieve: primes below a limit by the sieve of Eratosthenes (a bit array),
 * cross-checked by trial division on a sample; Euler's totient by
 * factorisation; twin primes; the largest prime gap; modular
 * exponentiation with a Fermat test.
 *
 * Exercises: integer multiply, divide and remainder (signed and unsigned),
 * loops whose trip counts depend on the input, nested loops, early break
 * (trial division stops at the first divisor).
 *
 * Arguments: [limit = 400000] [samples = 3000] [seed = 17]
 */
#include "common.h"

static uint32_t *bits;

static int composite(uint32_t n)
{
    return (bits[n >> 5] >> (n & 31u)) & 1u;
}

static void sieve(uint32_t limit)
{
    bits[0] |= 3u; /* 0 and 1 are not prime */
    for (uint32_t i = 2; i * i < limit; i++) {
        if (composite(i))
            continue;
        for (uint32_t j = i * i; j < limit; j += i)
            bits[j >> 5] |= 1u << (j & 31u);
    }
}

static int is_prime_trial(uint32_t n)
{
    if (n < 2)
        return 0;
    int prime = 1;
    for (uint32_t d = 2; d * d <= n; d++) {
        if (n % d == 0) {
            prime = 0;
            break;
        }
    }
    return prime;
}

static uint32_t totient(uint32_t n)
{
    uint32_t result = n;
    for (uint32_t p = 2; p * p <= n; p++) {
        if (n % p == 0) {
            while (n % p == 0)
                n /= p;
            result -= result / p;
        }
    }
    if (n > 1)
        result -= result / n;
    return result;
}

/* (b^e) mod m with 32-bit arithmetic only (m < 65536 keeps products small). */
static uint32_t powmod(uint32_t b, uint32_t e, uint32_t m)
{
    uint32_t r = 1 % m;
    b %= m;
    while (e) {
        if (e & 1u)
            r = r * b % m;
        b = b * b % m;
        e >>= 1;
    }
    return r;
}

int main(int argc, char **argv)
{
    uint32_t limit = arg_u32(argc, argv, 0, 400000);
    uint32_t samples = arg_u32(argc, argv, 1, 3000);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 17));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    if (limit < 16)
        limit = 16;
    bits = calloc(limit / 32 + 1, sizeof *bits);
    if (bits == 0) {
        printf("sieve: out of memory\n");
        return 99;
    }
    sieve(limit);
    uint32_t count = 0, twins = 0, last = 0, gap = 0, gap_at = 0;
    for (uint32_t n = 2; n < limit; n++) {
        if (composite(n))
            continue;
        count++;
        if (last && n - last == 2)
            twins++;
        if (last && n - last > gap) {
            gap = n - last;
            gap_at = last;
        }
        last = n;
    }
    printf("sieve: %u primes below %u, %u twin pairs, largest gap %u after %u\n",
           (unsigned)count, (unsigned)limit, (unsigned)twins, (unsigned)gap, (unsigned)gap_at);
    sum_add(&sum, count);
    sum_add(&sum, twins);
    sum_add(&sum, gap);

    uint32_t tot = 0, fermat_liars = 0;
    for (uint32_t s = 0; s < samples; s++) {
        uint32_t n = 2 + rng_below(&rng, limit - 2);
        int p = is_prime_trial(n);
        if (p != !composite(n))
            failed = 1;
        uint32_t phi = totient(n);
        /* phi(n) == n - 1 exactly for primes */
        if ((phi == n - 1) != p)
            failed = 2;
        tot += phi;
        uint32_t m = 3 + rng_below(&rng, 60000);
        if (!p && m == n)
            m++;
        if (n < 65536 && !p && powmod(2, n - 1, n) == 1)
            fermat_liars++;
        /* signed division rounds toward zero */
        int32_t a = (int32_t)(rng_next(&rng) >> 1) - 0x40000000;
        int32_t q = a / (int32_t)m, r = a % (int32_t)m;
        if (q * (int32_t)m + r != a || (r != 0 && (r < 0) != (a < 0)))
            failed = 3;
        sum_add(&sum, phi);
        sum_add(&sum, (uint32_t)q ^ (uint32_t)r);
    }
    printf("sieve: %u samples: sum of totients %u, %u Fermat liars to base 2\n",
           (unsigned)samples, (unsigned)tot, (unsigned)fermat_liars);
    free(bits);
    return finish("sieve", sum.h, failed);
}
