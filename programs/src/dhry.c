/*
 * dhry: a synthetic mix in the spirit of classic integer benchmarks (records,
 * pointers, strings, enumerations, small procedures), written for retrace.
 * Each iteration walks a linked list of records and applies an operation
 * chosen through a table of function pointers; string copies and compares
 * decide which branch runs next.
 *
 * Exercises: calls through function pointers, if-else chains, a switch over
 * an enumeration, strcpy/strcmp/strlen/memset, structure copies, integer
 * multiply and divide, a loop with a constant trip count around procedure
 * calls.
 *
 * Arguments: [iterations = 40000] [seed = 29]
 */
#include <string.h>
#include "common.h"

typedef enum { RED, GREEN, BLUE, AMBER, VIOLET } colour_t;

typedef struct record {
    struct record *next;
    colour_t colour;
    int32_t value;
    int32_t weight;
    char name[24];
} record_t;

typedef int32_t (*op_fn)(record_t *, int32_t);

static int32_t op_add(record_t *r, int32_t x)
{
    /* wrap like the hardware does, without signed overflow in C */
    r->value = (int32_t)((uint32_t)r->value + (uint32_t)x);
    return r->value;
}

static int32_t op_scale(record_t *r, int32_t x)
{
    r->value = (int32_t)((uint32_t)r->value * 3u) / (1 + (x & 7));
    return r->value;
}

static int32_t op_shade(record_t *r, int32_t x)
{
    switch (r->colour) {
    case RED:
        r->colour = GREEN;
        break;
    case GREEN:
        r->colour = x & 1 ? BLUE : RED;
        break;
    case BLUE:
        r->colour = AMBER;
        break;
    case AMBER:
        r->colour = VIOLET;
        break;
    case VIOLET:
        r->colour = (colour_t)(x % 5 < 0 ? -(x % 5) : x % 5);
        break;
    }
    return (int32_t)r->colour;
}

static int32_t op_rename(record_t *r, int32_t x)
{
    static const char *const names[4] = { "RECORD, FIRST STRING", "RECORD, SECOND STRING",
                                           "RECORD, THIRD STRING", "RECORD, 4TH STRING" };
    const char *n = names[(uint32_t)x % 4];
    if (strcmp(r->name, n) != 0)
        strcpy(r->name, n);
    return (int32_t)strlen(r->name);
}

static int32_t op_weigh(record_t *r, int32_t x)
{
    if (r->value > 1000)
        r->weight = r->value % 1000;
    else if (r->value < -1000)
        r->weight = -(r->value % 1000);
    else if (x > 0)
        r->weight += x % 17;
    else
        r->weight -= 1;
    return r->weight;
}

static const op_fn ops[5] = { op_add, op_scale, op_shade, op_rename, op_weigh };

static int compare_names(const record_t *a, const record_t *b)
{
    int c = strcmp(a->name, b->name);
    if (c < 0)
        return -1;
    if (c > 0)
        return 1;
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t iterations = arg_u32(argc, argv, 0, 40000);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 1, 29));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    static record_t pool[8];
    uint32_t calls[5] = { 0, 0, 0, 0, 0 };
    char buf[32];

    for (int i = 0; i < 8; i++) {
        memset(&pool[i], 0, sizeof pool[i]);
        pool[i].next = &pool[(i + 3) % 8];
        pool[i].colour = (colour_t)(i % 5);
        pool[i].value = i * 10;
        strcpy(pool[i].name, "RECORD, FIRST STRING");
    }
    record_t *cur = &pool[0];
    uint32_t acc = 0;
    for (uint32_t it = 0; it < iterations; it++) {
        uint32_t r = rng_next(&rng);
        /* constant trip count: four records per iteration */
        for (int k = 0; k < 4; k++) {
            uint32_t which = (r >> (k * 3)) % 5;
            acc += (uint32_t)ops[which](cur, (int32_t)(r >> 16) - 32768);
            calls[which]++;
            cur = cur->next;
        }
        if (compare_names(cur, cur->next) == 0) {
            record_t copy = *cur; /* structure copy */
            copy.value ^= (int32_t)it;
            acc += (uint32_t)copy.value & 0xffu;
        } else if (cur->colour == VIOLET) {
            strcpy(buf, cur->name);
            buf[0] = (char)('A' + it % 26);
            acc += (uint32_t)buf[0];
        } else {
            acc -= (uint32_t)cur->weight;
        }
        if ((it & 1023u) == 0)
            sum_add(&sum, acc);
    }
    for (int i = 0; i < 8; i++) {
        sum_add(&sum, (uint32_t)pool[i].value);
        sum_add(&sum, (uint32_t)pool[i].weight);
        sum_add(&sum, (uint32_t)pool[i].colour);
        if (strlen(pool[i].name) < 18)
            failed = 1;
    }
    uint32_t total = 0;
    for (int k = 0; k < 5; k++)
        total += calls[k];
    if (total != iterations * 4)
        failed = 2;
    printf("dhry: %u iterations, calls %u %u %u %u %u, acc %d\n", (unsigned)iterations,
           (unsigned)calls[0], (unsigned)calls[1], (unsigned)calls[2], (unsigned)calls[3],
           (unsigned)calls[4], (int)(int32_t)acc);
    return finish("dhry", sum.h, failed);
}
