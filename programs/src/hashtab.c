/*
 * hashtab: a chained hash table with string keys that grows by rehashing.
 * Keys are generated words; the program inserts, looks up, counts and
 * deletes them, then checks the table against a running tally.
 *
 * Exercises: malloc/free (one node per key, the bucket array on growth),
 * hashing, string routines (strlen, strcmp, memcpy), data-dependent
 * branches, early return out of the chain walk.
 *
 * Arguments: [operations = 20000] [distinct keys = 6000] [seed = 11]
 */
#include <string.h>
#include "common.h"

typedef struct node {
    struct node *next;
    uint32_t hash;
    uint32_t count;
    char key[];
} node_t;

typedef struct {
    node_t **bucket;
    uint32_t nbuckets;
    uint32_t size;
    uint32_t grows;
} table_t;

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    while (*s) {
        h ^= (uint8_t)*s++;
        h *= 16777619u;
    }
    return h;
}

static int table_init(table_t *t, uint32_t n)
{
    t->bucket = calloc(n, sizeof *t->bucket);
    t->nbuckets = n;
    t->size = 0;
    t->grows = 0;
    return t->bucket != 0;
}

static node_t *find(const table_t *t, const char *key, uint32_t h)
{
    for (node_t *n = t->bucket[h & (t->nbuckets - 1)]; n; n = n->next) {
        if (n->hash == h && strcmp(n->key, key) == 0)
            return n;
    }
    return 0;
}

static int grow(table_t *t)
{
    uint32_t nb = t->nbuckets * 2;
    node_t **b = calloc(nb, sizeof *b);
    if (b == 0)
        return 0;
    for (uint32_t i = 0; i < t->nbuckets; i++) {
        node_t *n = t->bucket[i];
        while (n) {
            node_t *next = n->next;
            uint32_t j = n->hash & (nb - 1);
            n->next = b[j];
            b[j] = n;
            n = next;
        }
    }
    free(t->bucket);
    t->bucket = b;
    t->nbuckets = nb;
    t->grows++;
    return 1;
}

/* Add one to key's count, inserting it if new; 0 when out of memory. */
static int add(table_t *t, const char *key)
{
    uint32_t h = hash_str(key);
    node_t *n = find(t, key, h);
    if (n) {
        n->count++;
        return 1;
    }
    if (t->size + 1 > t->nbuckets * 3 / 4 && !grow(t))
        return 0;
    size_t len = strlen(key);
    n = malloc(sizeof *n + len + 1);
    if (n == 0)
        return 0;
    memcpy(n->key, key, len + 1);
    n->hash = h;
    n->count = 1;
    uint32_t i = h & (t->nbuckets - 1);
    n->next = t->bucket[i];
    t->bucket[i] = n;
    t->size++;
    return 1;
}

/* Remove key; returns its count, or 0 when it was absent. */
static uint32_t del(table_t *t, const char *key)
{
    uint32_t h = hash_str(key);
    node_t **link = &t->bucket[h & (t->nbuckets - 1)];
    for (node_t *n = *link; n; link = &n->next, n = n->next) {
        if (n->hash == h && strcmp(n->key, key) == 0) {
            uint32_t c = n->count;
            *link = n->next;
            free(n);
            t->size--;
            return c;
        }
    }
    return 0;
}

static void table_free(table_t *t)
{
    for (uint32_t i = 0; i < t->nbuckets; i++) {
        node_t *n = t->bucket[i];
        while (n) {
            node_t *next = n->next;
            free(n);
            n = next;
        }
    }
    free(t->bucket);
}

/* Word number k: syllables chosen by k's digits in base 8. */
static void make_key(uint32_t k, char *out)
{
    static const char *const syl[8] = { "ka", "ri", "tos", "me", "lun", "a", "vex", "do" };
    char *p = out;
    do {
        const char *s = syl[k & 7u];
        while (*s)
            *p++ = *s++;
        k >>= 3;
    } while (k);
    *p = 0;
}

int main(int argc, char **argv)
{
    uint32_t ops = arg_u32(argc, argv, 0, 20000);
    uint32_t keys = arg_u32(argc, argv, 1, 6000);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 11));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    table_t t;
    char key[64];
    uint32_t added = 0, removed = 0, hits = 0;

    if (keys == 0)
        keys = 1;
    if (!table_init(&t, 16)) {
        printf("hashtab: out of memory\n");
        return 99;
    }
    for (uint32_t i = 0; i < ops; i++) {
        uint32_t r = rng_next(&rng);
        /* skewed keys: small numbers are much more frequent */
        uint32_t k = (r >> 8) % keys;
        if (r & 1u)
            k = k % (keys / 16 + 1);
        make_key(k, key);
        switch (r >> 28) {
        case 0: /* delete */
            removed += del(&t, key);
            break;
        case 1:
        case 2:
        case 3: { /* look up only */
            node_t *n = find(&t, key, hash_str(key));
            if (n)
                hits++;
            break;
        }
        default:
            if (!add(&t, key)) {
                printf("hashtab: out of memory\n");
                return 99;
            }
            added++;
        }
    }
    /* the counts left in the table are what was added minus what was removed */
    uint32_t left = 0, longest = 0;
    for (uint32_t i = 0; i < t.nbuckets; i++) {
        uint32_t chain = 0;
        for (node_t *n = t.bucket[i]; n; n = n->next) {
            left += n->count;
            chain++;
            sum_add(&sum, n->hash ^ n->count);
        }
        if (chain > longest)
            longest = chain;
    }
    if (left != added - removed)
        failed = 1;
    printf("hashtab: %u keys in %u buckets (grew %u times), longest chain %u\n", (unsigned)t.size,
           (unsigned)t.nbuckets, (unsigned)t.grows, (unsigned)longest);
    printf("hashtab: added %u removed %u hits %u\n", (unsigned)added, (unsigned)removed,
           (unsigned)hits);
    sum_add(&sum, t.size);
    sum_add(&sum, hits);
    table_free(&t);
    return finish("hashtab", sum.h, failed);
}
