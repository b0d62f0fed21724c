/*
 * crc32: CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) computed bit
 * by bit and through a 256-entry table, and Adler-32, over generated
 * buffers; the results must agree with each other and with the standard
 * check value CRC-32("123456789") = 0xCBF43926.
 *
 * Exercises: loops with a constant trip count (8 bits per byte, 256 table
 * entries), loops whose trip count is the buffer length, integer
 * remainder (Adler's mod 65521), memset/memcpy/strlen.
 *
 * Arguments: [length = 4096] [buffers = 40] [seed = 3]
 */
#include <string.h>
#include "common.h"

#define POLY 0xedb88320u

static uint32_t table[256];

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ POLY : c >> 1;
        table[i] = c;
    }
}

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
    }
    return ~c;
}

static uint32_t crc_table(uint32_t c, const uint8_t *p, size_t n)
{
    c = ~c;
    while (n--)
        c = table[(c ^ *p++) & 0xffu] ^ (c >> 8);
    return ~c;
}

static uint32_t adler32(const uint8_t *p, size_t n)
{
    uint32_t a = 1, b = 0;
    while (n > 0) {
        /* 5552 is the largest block that cannot overflow before the mod */
        size_t block = n < 5552 ? n : 5552;
        n -= block;
        while (block--) {
            a += *p++;
            b += a;
        }
        a %= 65521u;
        b %= 65521u;
    }
    return (b << 16) | a;
}

int main(int argc, char **argv)
{
    uint32_t len = arg_u32(argc, argv, 0, 4096);
    uint32_t buffers = arg_u32(argc, argv, 1, 40);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 3));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    make_table();
    const char *check = "123456789";
    uint32_t c1 = crc_bitwise((const uint8_t *)check, strlen(check));
    uint32_t c2 = crc_table(0, (const uint8_t *)check, strlen(check));
    printf("crc32: check value %08x %08x\n", (unsigned)c1, (unsigned)c2);
    if (c1 != 0xcbf43926u || c2 != 0xcbf43926u)
        failed = 1;

    uint8_t *buf = malloc(len + 1);
    uint8_t *copy = malloc(len + 1);
    if (buf == 0 || copy == 0) {
        printf("crc32: out of memory\n");
        return 99;
    }
    for (uint32_t b = 0; b < buffers; b++) {
        memset(buf, (int)b, len);
        /* vary the length per buffer: data-dependent trip counts */
        uint32_t n = len - (rng_next(&rng) % (len / 2 + 1));
        for (uint32_t i = 0; i < n; i += 1 + (rng_next(&rng) & 3u))
            buf[i] = (uint8_t)rng_next(&rng);
        memcpy(copy, buf, n);
        uint32_t bit = crc_bitwise(copy, n);
        /* the table version fed in two pieces must give the same value */
        uint32_t half = n / 3;
        uint32_t tab = crc_table(crc_table(0, buf, half), buf + half, n - half);
        if (bit != tab)
            failed = 2;
        uint32_t ad = adler32(buf, n);
        sum_add(&sum, n);
        sum_add(&sum, tab);
        sum_add(&sum, ad);
        if (b < 3)
            printf("crc32: buffer %u: %u bytes crc %08x adler %08x\n", (unsigned)b, (unsigned)n,
                   (unsigned)tab, (unsigned)ad);
    }
    free(copy);
    free(buf);
    return finish("crc32", sum.h, failed);
}
