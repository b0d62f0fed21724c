/*
 * table: a shared hash table under one mutex, with contention.
 *
 * Every hart counts its share of a stream of keys (token i goes to hart
 * i mod harts) into one chained hash table whose nodes come from a shared
 * pool; each update locks the table's mutex, so the harts contend for it
 * all the time. Computing a key takes uneven work outside the lock. When
 * done, each secondary hart posts a semaphore; hart 0 waits for all of
 * them, then walks the table.
 *
 * Input: the number of tokens, the number of distinct keys and a seed
 * (numeric arguments; defaults 12000 400 3). Output: the hart count, the
 * table's statistics and `table: checksum xxxxxxxx`; none depend on the
 * hart count (the checksum adds over the nodes, so the order of the
 * chains does not matter). Exit: 1 + the checksum's low 6 bits.
 */
#include "../common.h"
#include "../sync.h"

#define BUCKETS 64
#define MAX_KEYS 4096

struct node {
    uint32_t key, count;
    struct node *next;
};

static struct node pool[MAX_KEYS];
static uint32_t used;
static struct node *bucket[BUCKETS];
static uint32_t tokens, keys, seed, harts;

SYNC_MUTEX(table_lock);
SYNC_SEMAPHORE(finished, 0);

/* The key of token i: a few rounds of mixing, more for some tokens. */
static uint32_t key_of(uint32_t i)
{
    uint32_t x = i ^ seed * 0x85ebca6bu;
    uint32_t rounds = 2 + (i * 7 + seed) % 5;
    for (uint32_t r = 0; r < rounds; r++) {
        x ^= x >> 16;
        x *= 0x7feb352du;
        x ^= x >> 15;
    }
    return x % keys;
}

static void count(uint32_t key)
{
    sync_lock(table_lock);
    struct node **at = &bucket[key % BUCKETS];
    while (*at && (*at)->key != key)
        at = &(*at)->next;
    if (*at) {
        (*at)->count++;
    } else {
        struct node *n = &pool[used++];
        n->key = key;
        n->count = 1;
        n->next = 0;
        *at = n;
    }
    sync_unlock(table_lock);
}

static void worker(unsigned h)
{
    for (uint32_t i = h; i < tokens; i += harts)
        count(key_of(i));
    if (h != 0)
        sync_sem_post(finished);
}

int main(int argc, char **argv)
{
    tokens = arg_u32(argc, argv, 0, 12000);
    keys = arg_u32(argc, argv, 1, 400);
    seed = arg_u32(argc, argv, 2, 3);
    if (keys == 0 || keys > MAX_KEYS) {
        printf("table: keys must be 1..%u\n", MAX_KEYS);
        return 2;
    }
    harts = sync_harts();
    if (sync_start(worker) == 0) {
        printf("table: at most %u harts\n", SYNC_MAX_HARTS);
        return 2;
    }
    worker(0);
    for (unsigned h = 1; h < harts; h++)
        sync_sem_wait(finished);
    printf("table: %u harts\n", (unsigned)harts);
    uint32_t total = 0, longest = 0, top_key = 0, top = 0, check = 0;
    for (int b = 0; b < BUCKETS; b++) {
        uint32_t chain = 0;
        for (struct node *n = bucket[b]; n; n = n->next) {
            chain++;
            total += n->count;
            check += (n->key * 2654435761u) ^ (n->count * 40503u);
            if (n->count > top || (n->count == top && n->key < top_key)) {
                top = n->count;
                top_key = n->key;
            }
        }
        if (chain > longest)
            longest = chain;
    }
    printf("%u tokens, %u distinct keys, longest chain %u, most frequent key %u (%u times)\n",
           (unsigned)total, (unsigned)used, (unsigned)longest, (unsigned)top_key, (unsigned)top);
    if (total != tokens) {
        printf("self-check FAILED: counted %u of %u tokens\n", (unsigned)total, (unsigned)tokens);
        return 101;
    }
    printf("table: checksum %08x\n", (unsigned)check);
    return 1 + (int)(check & 63);
}
