/*
 * reduce: parallel reduction with barriers.
 *
 * Every hart fills its slice of a shared array, then the harts reduce it in
 * two passes — sum, minimum and maximum first, then the sum of squared
 * deviations from the mean the first pass found — each pass a local
 * reduction over the hart's slice followed by a tree reduction over the
 * harts' partial results, log2(harts) rounds with a barrier after each.
 * The second pass needs the first's result: the barriers order them.
 *
 * Input: the array length and a seed (numeric arguments; defaults 24000 7).
 * Output: the hart count, the statistics and `reduce: checksum xxxxxxxx`,
 * all independent of the number of harts (unsigned arithmetic is exact
 * whatever the order of the additions). Exit: 1 + the checksum's low 6 bits.
 */
#include "../common.h"
#include "../sync.h"

#define MAX_LEN 65536

static uint32_t data[MAX_LEN];
static uint32_t len, seed, harts;

struct partial {
    uint64_t sum;
    uint32_t min, max;
};
static struct partial part[SYNC_MAX_HARTS];
static uint64_t devsq[SYNC_MAX_HARTS];
static uint32_t mean;

SYNC_BARRIER(phase, 0);

static uint32_t value_at(uint32_t i)
{
    uint32_t x = i * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return x % 100000u;
}

/* Tree reduction of the harts' partial results into those of hart 0: in
 * round r, hart h (a multiple of 2^(r+1)) takes in hart h + 2^r's. */
static void tree(unsigned h, void (*combine)(unsigned into, unsigned from))
{
    for (unsigned stride = 1; stride < harts; stride *= 2) {
        if (h % (2 * stride) == 0 && h + stride < harts)
            combine(h, h + stride);
        sync_barrier(phase);
    }
}

static void combine_stats(unsigned into, unsigned from)
{
    part[into].sum += part[from].sum;
    if (part[from].min < part[into].min)
        part[into].min = part[from].min;
    if (part[from].max > part[into].max)
        part[into].max = part[from].max;
}

static void combine_dev(unsigned into, unsigned from) { devsq[into] += devsq[from]; }

static void worker(unsigned h)
{
    uint32_t lo = (uint32_t)((uint64_t)len * h / harts);
    uint32_t hi = (uint32_t)((uint64_t)len * (h + 1) / harts);
    for (uint32_t i = lo; i < hi; i++)
        data[i] = value_at(i);
    sync_barrier(phase);

    struct partial p = {0, UINT32_MAX, 0};
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t v = data[i];
        p.sum += v;
        if (v < p.min)
            p.min = v;
        if (v > p.max)
            p.max = v;
    }
    part[h] = p;
    sync_barrier(phase);
    tree(h, combine_stats);
    if (h == 0)
        mean = (uint32_t)(part[0].sum / len);
    sync_barrier(phase);

    uint64_t d = 0;
    for (uint32_t i = lo; i < hi; i++) {
        int64_t e = (int64_t)data[i] - mean;
        d += (uint64_t)(e * e);
    }
    devsq[h] = d;
    sync_barrier(phase);
    tree(h, combine_dev);
}

int main(int argc, char **argv)
{
    len = arg_u32(argc, argv, 0, 24000);
    seed = arg_u32(argc, argv, 1, 7);
    if (len == 0 || len > MAX_LEN) {
        printf("reduce: length must be 1..%u\n", MAX_LEN);
        return 2;
    }
    /* Before the workers start: they read it at once. */
    harts = sync_harts();
    if (sync_start(worker) == 0) {
        printf("reduce: at most %u harts\n", SYNC_MAX_HARTS);
        return 2;
    }
    worker(0);
    printf("reduce: %u harts\n", (unsigned)harts);
    uint32_t var = (uint32_t)(devsq[0] / len);
    printf("n %u sum %llu min %u max %u mean %u variance %u\n", (unsigned)len,
           (unsigned long long)part[0].sum, (unsigned)part[0].min, (unsigned)part[0].max,
           (unsigned)mean, (unsigned)var);
    uint32_t check = (uint32_t)part[0].sum * 31u ^ part[0].min * 7u ^ part[0].max ^ var * 131u;
    printf("reduce: checksum %08x\n", (unsigned)check);
    return 1 + (int)(check & 63);
}
