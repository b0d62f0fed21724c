/*
 * pipeline: a producer/consumer pipeline over channels.
 *
 * Twelve transformation stages, spread over the secondary harts in
 * contiguous groups (hart 1 takes the first stages, the last hart the
 * last), connected by channels of capacity 4. Hart 0 is both ends: it
 * feeds items into the first channel and takes results from the last,
 * keeping at most four in flight so that it can never block the pipeline
 * it drains. With one hart, hart 0 runs the stages itself.
 *
 * The stages do uneven, data-dependent work, so harts wait on full and
 * empty channels in turn. Results come out in order (channels are FIFO),
 * and the checksum depends on that order.
 *
 * Input: the number of items and a seed (numeric arguments; defaults
 * 3000 5). Output: the hart count, the stage layout, and `pipeline:
 * checksum xxxxxxxx`, which does not depend on the hart count. Exit: 1 +
 * the checksum's low 6 bits.
 */
#include "../common.h"
#include "../sync.h"

#define STAGES 12
#define IN_FLIGHT 4

SYNC_CHANNEL(c0, IN_FLIGHT);
SYNC_CHANNEL(c1, IN_FLIGHT);
SYNC_CHANNEL(c2, IN_FLIGHT);
SYNC_CHANNEL(c3, IN_FLIGHT);
SYNC_CHANNEL(c4, IN_FLIGHT);
SYNC_CHANNEL(c5, IN_FLIGHT);
SYNC_CHANNEL(c6, IN_FLIGHT);
SYNC_CHANNEL(c7, IN_FLIGHT);
SYNC_CHANNEL(c8, IN_FLIGHT);
SYNC_CHANNEL(c9, IN_FLIGHT);
SYNC_CHANNEL(c10, IN_FLIGHT);
SYNC_CHANNEL(c11, IN_FLIGHT);
SYNC_CHANNEL(c12, IN_FLIGHT);

/* Channel k feeds group k (0-based); channel `groups` returns to hart 0. */
static sync_channel_t chan[STAGES + 1];
static uint32_t items, seed, groups;

static uint32_t stage(uint32_t k, uint32_t x)
{
    uint32_t rounds = 3 + (x >> 29) + k % 3;
    for (uint32_t r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x += k * 0x9e3779b9u + r;
    }
    return x;
}

static uint32_t first_stage(uint32_t g) { return g * STAGES / groups; }

static void worker(unsigned h)
{
    if (h > groups)
        return; /* more harts than stages: nothing to do */
    uint32_t g = h - 1, lo = first_stage(g), hi = first_stage(g + 1);
    for (uint32_t i = 0; i < items; i++) {
        uint32_t x = (uint32_t)sync_recv(chan[g]);
        for (uint32_t k = lo; k < hi; k++)
            x = stage(k, x);
        sync_send(chan[g + 1], (sync_word_t)x);
    }
}

static uint32_t item(uint32_t i) { return i * 2654435761u ^ seed; }

int main(int argc, char **argv)
{
    items = arg_u32(argc, argv, 0, 3000);
    seed = arg_u32(argc, argv, 1, 5);
    sync_channel_t all[STAGES + 1] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12};
    for (int k = 0; k <= STAGES; k++)
        chan[k] = all[k];
    unsigned harts = sync_harts();
    groups = harts - 1 < STAGES ? harts - 1 : STAGES;
    if (sync_start(worker) == 0) {
        printf("pipeline: at most %u harts\n", SYNC_MAX_HARTS);
        return 2;
    }
    printf("pipeline: %u harts, %u stages in %u groups\n", harts, STAGES, (unsigned)groups);
    uint32_t check = 0, sent = 0;
    for (uint32_t got = 0; got < items; got++) {
        uint32_t x;
        if (groups == 0) {
            x = item(got);
            for (uint32_t k = 0; k < STAGES; k++)
                x = stage(k, x);
        } else {
            while (sent < items && sent < got + IN_FLIGHT)
                sync_send(chan[0], (sync_word_t)item(sent++));
            x = (uint32_t)sync_recv(chan[groups]);
        }
        check = check * 31u + x;
    }
    printf("%u items through %u stages\n", (unsigned)items, STAGES);
    printf("pipeline: checksum %08x\n", (unsigned)check);
    return 1 + (int)(check & 63);
}
