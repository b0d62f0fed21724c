/*
 * workq: a work queue with tasks of uneven size.
 *
 * Hart 0 is the dispatcher: it puts task numbers into a channel of
 * capacity 8 and then one stop mark per worker. Harts 1..N-1 take tasks as
 * they come free — a task costs from a few dozen to a few thousand
 * iterations, so fast and slow harts even out — and fold each result into
 * a sum of their own; they are joined at a barrier, and hart 0 adds the
 * sums up. With one hart, hart 0 runs every task itself.
 *
 * Input: the number of tasks and a seed (numeric arguments; defaults 600
 * 9). Output: the hart count, the task statistics and `workq: checksum
 * xxxxxxxx`, which does not depend on which hart ran which task (the
 * results are combined by addition). Exit: 1 + the checksum's low 6 bits.
 */
#include "../common.h"
#include "../sync.h"

#define STOP (-1)

SYNC_CHANNEL(tasks, 8);
SYNC_BARRIER(joined, 0);

static uint32_t ntasks, seed, harts;
static uint32_t sum[SYNC_MAX_HARTS], iterations[SYNC_MAX_HARTS];

static uint32_t task_size(uint32_t t)
{
    uint32_t x = (t + 1) * 0x9e3779b1u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    /* Mostly small tasks, some large ones. */
    return (x & 7) == 0 ? 2000 + x % 2000 : 30 + x % 300;
}

/* A task: a Collatz-like walk whose length is the task's size. */
static uint32_t run_task(uint32_t t, uint32_t *spent)
{
    uint32_t n = task_size(t), x = t ^ seed, acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        x = (x & 1) ? 3 * x + 1 : x / 2;
        acc += x ^ i;
    }
    *spent += n;
    return acc * 2654435761u ^ t;
}

static void worker(unsigned h)
{
    if (h == 0)
        return;
    for (;;) {
        sync_word_t t = sync_recv(tasks);
        if (t == STOP)
            break;
        sum[h] += run_task((uint32_t)t, &iterations[h]);
    }
    sync_barrier(joined);
}

int main(int argc, char **argv)
{
    ntasks = arg_u32(argc, argv, 0, 600);
    seed = arg_u32(argc, argv, 1, 9);
    harts = sync_harts();
    if (sync_start(worker) == 0) {
        printf("workq: at most %u harts\n", SYNC_MAX_HARTS);
        return 2;
    }
    if (harts == 1) {
        for (uint32_t t = 0; t < ntasks; t++)
            sum[0] += run_task(t, &iterations[0]);
    } else {
        for (uint32_t t = 0; t < ntasks; t++)
            sync_send(tasks, (sync_word_t)t);
        for (unsigned h = 1; h < harts; h++)
            sync_send(tasks, STOP);
        sync_barrier(joined);
    }
    uint32_t check = 0, spent = 0;
    for (unsigned h = 0; h < harts; h++) {
        check += sum[h];
        spent += iterations[h];
    }
    printf("workq: %u harts\n", (unsigned)harts);
    printf("%u tasks, %u iterations\n", (unsigned)ntasks, (unsigned)spent);
    printf("workq: checksum %08x\n", (unsigned)check);
    return 1 + (int)(check & 63);
}
