/*
 * stencil: 1-D heat diffusion by Jacobi steps, domain decomposition and
 * halo exchange.
 *
 * A rod of cells holds temperatures in fixed point (1/4096 of a degree),
 * random at first, between a hot end (100 degrees) and a cold one (0).
 * Each step every cell becomes (left + 2 * itself + right + 2) / 4 of the
 * previous step's values. Every hart, hart 0 too, owns a contiguous slice
 * of the rod, of uneven size (weights 4, 2, 3, 4, 2, 3, ... by hart
 * number); each step it sends its edge cells to its left and right
 * neighbours and receives theirs, through one channel per direction per
 * neighbour pair (capacity 2), then updates its slice. Every CHECK steps,
 * and at the last, the harts add up the sum of absolute changes of that
 * step over the whole rod: each writes its slice's sum to a slot of its
 * own, they meet at a barrier, and each adds all the slots (the slots
 * alternate between two sets, so a hart that runs ahead to the next check
 * never overwrites a sum another still reads). Every hart stops at the
 * same step: when the rod's sum falls below TOLERANCE per cell, or after
 * the maximum number of steps.
 *
 * Clocks (sync_set_hz): every hart starts at 100 MHz; after the first
 * check a hart with a smaller slice slows to 25 MHz per unit of weight
 * (50 or 75 MHz), so that it takes about as long per step as the others;
 * hart 0 runs at 150 MHz for the final reduction over the rod, then at
 * 100 MHz again. Frequencies change the timing only, never the result.
 *
 * Input: the number of cells, the maximum number of steps and a seed
 * (numeric arguments; defaults 600 500 3). Output: the hart count and
 * slice sizes, the step the run stopped at with the last residual and the
 * rod's statistics, and `stencil: checksum xxxxxxxx` of the final rod.
 * The updates are exact integer arithmetic, each cell's the same whoever
 * computes it, and the stopping test sees the whole rod's sum, so nothing
 * depends on the hart count. Exit: 1 + the checksum's low 6 bits.
 */
#include "../common.h"
#include "../sync.h"

#define MIN_CELLS 64
#define MAX_CELLS 4096
#define SCALE 4096u
#define HOT (100u * SCALE)
#define COLD 0u
#define CHECK 20
#define TOLERANCE 24u /* sum of absolute changes per cell, in 1/4096 degree */
#define MHZ 1000000ul

/* to_right[h] carries hart h's last cell to hart h + 1, to_left[h] hart
 * h + 1's first cell to hart h. */
#define HALO 2
SYNC_CHANNEL(r0, HALO);
SYNC_CHANNEL(r1, HALO);
SYNC_CHANNEL(r2, HALO);
SYNC_CHANNEL(r3, HALO);
SYNC_CHANNEL(r4, HALO);
SYNC_CHANNEL(r5, HALO);
SYNC_CHANNEL(r6, HALO);
SYNC_CHANNEL(r7, HALO);
SYNC_CHANNEL(r8, HALO);
SYNC_CHANNEL(r9, HALO);
SYNC_CHANNEL(r10, HALO);
SYNC_CHANNEL(r11, HALO);
SYNC_CHANNEL(r12, HALO);
SYNC_CHANNEL(r13, HALO);
SYNC_CHANNEL(r14, HALO);
SYNC_CHANNEL(l0, HALO);
SYNC_CHANNEL(l1, HALO);
SYNC_CHANNEL(l2, HALO);
SYNC_CHANNEL(l3, HALO);
SYNC_CHANNEL(l4, HALO);
SYNC_CHANNEL(l5, HALO);
SYNC_CHANNEL(l6, HALO);
SYNC_CHANNEL(l7, HALO);
SYNC_CHANNEL(l8, HALO);
SYNC_CHANNEL(l9, HALO);
SYNC_CHANNEL(l10, HALO);
SYNC_CHANNEL(l11, HALO);
SYNC_CHANNEL(l12, HALO);
SYNC_CHANNEL(l13, HALO);
SYNC_CHANNEL(l14, HALO);
SYNC_BARRIER(check, 0);

static sync_channel_t to_right[SYNC_MAX_HARTS - 1], to_left[SYNC_MAX_HARTS - 1];
static uint32_t rod[2][MAX_CELLS];
static uint64_t residual_slot[2][SYNC_MAX_HARTS];
static uint32_t cells, max_steps, seed, harts;
/* Where and how the run stopped (every hart decides the same; hart 0
 * keeps it). */
static uint32_t stopped_at;
static uint64_t last_residual;

static const uint32_t weights[3] = {4, 2, 3};
static uint32_t weight(unsigned h) { return weights[h % 3]; }

/* The first cell of hart h's slice (h = harts: the end of the rod). */
static uint32_t slice_start(unsigned h)
{
    uint32_t before = 0, total = 0;
    for (unsigned k = 0; k < harts; k++) {
        if (k < h)
            before += weight(k);
        total += weight(k);
    }
    return (uint32_t)((uint64_t)cells * before / total);
}

static uint32_t initial(uint32_t i)
{
    uint32_t x = (i + 1) * 2654435761u ^ seed * 0x85ebca6bu;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return x % HOT;
}

/* The new value of a cell whose neighbours are `prev` and `next`. */
static inline uint32_t cell(uint32_t prev, uint32_t cur, uint32_t next)
{
    return (prev + 2 * cur + next + 2) >> 2;
}

static inline uint32_t change(uint32_t a, uint32_t b) { return a > b ? a - b : b - a; }

/* One step of cells lo..hi-1 from `from` into `to`, the cells beyond the
 * slice being `left` and `right`; the sum of absolute changes if `measure`. */
static inline uint64_t step(const uint32_t *from, uint32_t *to, uint32_t lo, uint32_t hi,
                            uint32_t left, uint32_t right, int measure)
{
    uint64_t changed = 0;
    const uint32_t *p = from + lo, *end = from + hi - 1;
    uint32_t *q = to + lo;
    uint32_t prev = left, cur = *p;
    for (; p < end; p++, q++) {
        uint32_t next = p[1];
        *q = cell(prev, cur, next);
        if (measure)
            changed += change(*q, cur);
        prev = cur;
        cur = next;
    }
    *q = cell(prev, cur, right);
    if (measure)
        changed += change(*q, cur);
    return changed;
}

static void worker(unsigned h)
{
    sync_set_hz(100 * MHZ);
    uint32_t lo = slice_start(h), hi = slice_start(h + 1);
    for (uint32_t i = lo; i < hi; i++)
        rod[0][i] = initial(i);
    int has_left = h > 0, has_right = h + 1 < harts;
    uint32_t checks = 0;
    for (uint32_t t = 0;; t++) {
        const uint32_t *from = rod[t & 1];
        uint32_t *to = rod[(t + 1) & 1];
        /* Edges out first (a send waits only for a neighbour two steps
         * behind), then the neighbours' edges in. */
        if (has_left)
            sync_send(to_left[h - 1], (sync_word_t)from[lo]);
        if (has_right)
            sync_send(to_right[h], (sync_word_t)from[hi - 1]);
        uint32_t left = has_left ? (uint32_t)sync_recv(to_right[h - 1]) : HOT;
        uint32_t right = has_right ? (uint32_t)sync_recv(to_left[h]) : COLD;
        int last = t + 1 == max_steps;
        if ((t + 1) % CHECK != 0 && !last) {
            step(from, to, lo, hi, left, right, 0);
            continue;
        }
        uint64_t (*slots)[SYNC_MAX_HARTS] = &residual_slot[checks & 1];
        (*slots)[h] = step(from, to, lo, hi, left, right, 1);
        sync_barrier(check);
        uint64_t total = 0;
        for (unsigned k = 0; k < harts; k++)
            total += (*slots)[k];
        if (checks++ == 0 && weight(h) < weight(0))
            sync_set_hz(weight(h) * 25 * MHZ);
        if (last || total < (uint64_t)cells * TOLERANCE) {
            if (h == 0) {
                stopped_at = t + 1;
                last_residual = total;
            }
            return;
        }
    }
}

int main(int argc, char **argv)
{
    cells = arg_u32(argc, argv, 0, 600);
    max_steps = arg_u32(argc, argv, 1, 500);
    seed = arg_u32(argc, argv, 2, 3);
    if (cells < MIN_CELLS || cells > MAX_CELLS || max_steps == 0) {
        printf("stencil: cells must be %u..%u, steps at least 1\n", MIN_CELLS, MAX_CELLS);
        return 2;
    }
    sync_channel_t right[] = {r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14};
    sync_channel_t left[] = {l0, l1, l2, l3, l4, l5, l6, l7, l8, l9, l10, l11, l12, l13, l14};
    for (int k = 0; k < SYNC_MAX_HARTS - 1; k++) {
        to_right[k] = right[k];
        to_left[k] = left[k];
    }
    /* Before the workers start: they read it at once. */
    harts = sync_harts();
    if (sync_start(worker) == 0) {
        printf("stencil: at most %u harts\n", SYNC_MAX_HARTS);
        return 2;
    }
    worker(0);
    /* Every hart has passed the last check's barrier, its slice written:
     * the rod is complete. */
    uint32_t smallest = UINT32_MAX, largest = 0;
    for (unsigned h = 0; h < harts; h++) {
        uint32_t n = slice_start(h + 1) - slice_start(h);
        if (n < smallest)
            smallest = n;
        if (n > largest)
            largest = n;
    }
    printf("stencil: %u harts, slices of %u to %u cells\n", (unsigned)harts, (unsigned)smallest,
           (unsigned)largest);
    sync_set_hz(150 * MHZ);
    const uint32_t *final = rod[stopped_at & 1];
    uint32_t check = 0, min = UINT32_MAX, max = 0;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < cells; i++) {
        uint32_t v = final[i];
        check = check * 31u + v;
        sum += v;
        if (v < min)
            min = v;
        if (v > max)
            max = v;
    }
    sync_set_hz(100 * MHZ);
    uint32_t mean = (uint32_t)(sum / cells);
    printf("%u cells, stopped after %u of at most %u steps, residual %llu\n", (unsigned)cells,
           (unsigned)stopped_at, (unsigned)max_steps, (unsigned long long)last_residual);
    printf("temperature min %u max %u mean %u (1/%u degree)\n", (unsigned)min, (unsigned)max,
           (unsigned)mean, SCALE);
    printf("stencil: checksum %08x\n", (unsigned)check);
    return 1 + (int)(check & 63);
}
