/*
 * lzrle: two compressors and their decompressors over generated data with
 * repeats and runs: a byte-oriented run-length coder, and an LZ77 coder
 * with a hash-chain match finder (window 4 KiB, matches 3..258 bytes). Every
 * compressed block is decompressed and compared with the original.
 *
 * Exercises: data-dependent branches (match search), early break out of
 * the chain walk when a match is long enough, loops with input-dependent
 * trip counts, memcmp/memcpy/memset, malloc/free.
 *
 * Arguments: [block size = 16384] [blocks = 6] [seed = 23]
 */
#include <string.h>
#include "common.h"

#define WINDOW 4096
#define MIN_MATCH 3
#define MAX_MATCH 258
#define HASH_BITS 12
#define MAX_CHAIN 32

/* RLE: a control byte c < 128 is followed by c+1 literals; c >= 128 by one
 * byte repeated c-125 times (3..130). */
static size_t rle_encode(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        size_t run = 1;
        while (i + run < n && run < 130 && in[i + run] == in[i])
            run++;
        if (run >= 3) {
            out[o++] = (uint8_t)(run + 125);
            out[o++] = in[i];
            i += run;
            continue;
        }
        /* literals until the next run of three or 128 bytes */
        size_t start = i, lit = 0;
        while (i < n && lit < 128) {
            if (i + 2 < n && in[i] == in[i + 1] && in[i] == in[i + 2])
                break;
            i++;
            lit++;
        }
        out[o++] = (uint8_t)(lit - 1);
        memcpy(out + o, in + start, lit);
        o += lit;
    }
    return o;
}

static size_t rle_decode(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t c = in[i++];
        if (c >= 128) {
            memset(out + o, in[i++], (size_t)c - 125);
            o += (size_t)c - 125;
        } else {
            memcpy(out + o, in + i, (size_t)c + 1);
            i += (size_t)c + 1;
            o += (size_t)c + 1;
        }
    }
    return o;
}

/* LZ77 tokens: 0x00 len literal bytes (len 1..256 as len-1), or 0x01 then
 * offset (2 bytes) and length-3 (1 byte). */
static int32_t head[1 << HASH_BITS];
static int32_t prev[WINDOW];

static uint32_t hash3(const uint8_t *p)
{
    return ((uint32_t)p[0] * 2654435761u ^ (uint32_t)p[1] * 40503u ^ p[2]) >> (32 - HASH_BITS) &
           ((1u << HASH_BITS) - 1);
}

static size_t lz_encode(const uint8_t *in, size_t n, uint8_t *out, uint32_t *matches)
{
    size_t i = 0, o = 0, lit_start = 0;
    for (size_t k = 0; k < (1u << HASH_BITS); k++)
        head[k] = -1;
    *matches = 0;
    while (i < n) {
        size_t best_len = 0, best_off = 0;
        if (i + MIN_MATCH <= n) {
            uint32_t h = hash3(in + i);
            int32_t cand = head[h];
            int chain = 0;
            while (cand >= 0 && i - (size_t)cand <= WINDOW - 1 && chain++ < MAX_CHAIN) {
                size_t len = 0, max = n - i < MAX_MATCH ? n - i : MAX_MATCH;
                while (len < max && in[(size_t)cand + len] == in[i + len])
                    len++;
                if (len > best_len) {
                    best_len = len;
                    best_off = i - (size_t)cand;
                    if (len == max)
                        break; /* cannot do better */
                }
                cand = prev[cand % WINDOW];
            }
            prev[i % WINDOW] = head[h];
            head[h] = (int32_t)i;
        }
        if (best_len >= MIN_MATCH) {
            /* flush pending literals */
            while (lit_start < i) {
                size_t len = i - lit_start > 256 ? 256 : i - lit_start;
                out[o++] = 0;
                out[o++] = (uint8_t)(len - 1);
                memcpy(out + o, in + lit_start, len);
                o += len;
                lit_start += len;
            }
            out[o++] = 1;
            out[o++] = (uint8_t)(best_off >> 8);
            out[o++] = (uint8_t)best_off;
            out[o++] = (uint8_t)(best_len - MIN_MATCH);
            (*matches)++;
            /* insert the skipped positions into the hash chains */
            for (size_t k = 1; k < best_len; k++) {
                if (i + k + MIN_MATCH <= n) {
                    uint32_t h = hash3(in + i + k);
                    prev[(i + k) % WINDOW] = head[h];
                    head[h] = (int32_t)(i + k);
                }
            }
            i += best_len;
            lit_start = i;
        } else {
            i++;
        }
    }
    while (lit_start < n) {
        size_t len = n - lit_start > 256 ? 256 : n - lit_start;
        out[o++] = 0;
        out[o++] = (uint8_t)(len - 1);
        memcpy(out + o, in + lit_start, len);
        o += len;
        lit_start += len;
    }
    return o;
}

static size_t lz_decode(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        if (in[i] == 0) {
            size_t len = (size_t)in[i + 1] + 1;
            memcpy(out + o, in + i + 2, len);
            i += 2 + len;
            o += len;
        } else {
            size_t off = ((size_t)in[i + 1] << 8) | in[i + 2];
            size_t len = (size_t)in[i + 3] + MIN_MATCH;
            /* byte by byte: the source may overlap the destination */
            for (size_t k = 0; k < len; k++)
                out[o + k] = out[o + k - off];
            i += 4;
            o += len;
        }
    }
    return o;
}

static void generate(uint8_t *buf, size_t n, rng_t *rng)
{
    static const char *const phrases[] = { "the quick ", "branch ", "history ", "loop ",
                                           "partial program ", "0000", "retire " };
    size_t i = 0;
    while (i < n) {
        uint32_t r = rng_next(rng);
        switch (r % 4) {
        case 0: { /* a phrase */
            const char *p = phrases[(r >> 4) % 7];
            while (*p && i < n)
                buf[i++] = (uint8_t)*p++;
            break;
        }
        case 1: { /* a run */
            size_t len = 3 + (r >> 8) % 40;
            while (len-- && i < n)
                buf[i++] = (uint8_t)(r >> 16);
            break;
        }
        case 2: { /* copy from earlier */
            if (i > 64) {
                size_t off = 1 + (r >> 8) % (i < 2000 ? i - 1 : 2000);
                size_t len = 4 + (r >> 20) % 30;
                while (len-- && i < n) {
                    buf[i] = buf[i - off];
                    i++;
                }
            }
            break;
        }
        default: /* noise */
            for (int k = 0; k < 6 && i < n; k++)
                buf[i++] = (uint8_t)rng_next(rng);
        }
    }
}

int main(int argc, char **argv)
{
    uint32_t size = arg_u32(argc, argv, 0, 16384);
    uint32_t blocks = arg_u32(argc, argv, 1, 6);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 23));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    uint32_t in_total = 0, rle_total = 0, lz_total = 0;

    if (size == 0)
        size = 1;
    for (uint32_t b = 0; b < blocks; b++) {
        uint8_t *data = malloc(size);
        /* worst cases: RLE adds 1 byte per 128, LZ 2 per 256 */
        uint8_t *packed = malloc(size + size / 64 + 16);
        uint8_t *back = malloc(size + MAX_MATCH);
        if (data == 0 || packed == 0 || back == 0) {
            printf("lzrle: out of memory\n");
            return 99;
        }
        generate(data, size, &rng);
        size_t r = rle_encode(data, size, packed);
        uint32_t rc = 0;
        for (size_t k = 0; k < r; k++)
            rc = rc * 31u + packed[k];
        if (rle_decode(packed, r, back) != size || memcmp(back, data, size) != 0)
            failed = 1;
        uint32_t matches;
        size_t z = lz_encode(data, size, packed, &matches);
        uint32_t zc = 0;
        for (size_t k = 0; k < z; k++)
            zc = zc * 31u + packed[k];
        if (lz_decode(packed, z, back) != size || memcmp(back, data, size) != 0)
            failed = 2;
        in_total += size;
        rle_total += (uint32_t)r;
        lz_total += (uint32_t)z;
        sum_add(&sum, rc);
        sum_add(&sum, zc);
        sum_add(&sum, matches);
        free(back);
        free(packed);
        free(data);
    }
    printf("lzrle: %u bytes in %u blocks: rle %u bytes, lz %u bytes\n", (unsigned)in_total,
           (unsigned)blocks, (unsigned)rle_total, (unsigned)lz_total);
    return finish("lzrle", sum.h, failed);
}
