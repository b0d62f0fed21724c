/*
 * sync_atomic.h: sync.h's objects from RISC-V atomics only (included by
 * sync.h when SYNC_ATOMIC is defined; do not include it directly).
 *
 * Every object is plain memory operated on with the compiler's __atomic
 * builtins, which compile to AMOs (amoswap, amoadd) and LR/SC loops on
 * rv32imac/rv64imac; a hart that must wait spins. This is the build that
 * runs under `qemu-system-riscv32/64 -smp N`, the functional oracle for
 * retrace's synchronisation API: same objects, same semantics (first-come
 * order aside — which hart wins a free lock may differ, so programs must
 * not print anything that depends on it).
 *
 * The number of harts comes from the device tree QEMU passes in a1 (kept
 * in mscratch by the entry code): the count of /cpus/cpu@… nodes.
 */
#ifndef RETRACE_PROGRAMS_SYNC_ATOMIC_H
#define RETRACE_PROGRAMS_SYNC_ATOMIC_H

#ifndef RETRACE_PROGRAMS_SYNC_H
#error "include sync.h, with SYNC_ATOMIC defined"
#endif

#include <string.h>

/* A spin lock: amoswap.w.aq to take it, a release store to give it back. */
static inline void sync_spin_lock_(volatile int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            ;
}
static inline void sync_spin_unlock_(volatile int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

struct sync_channel {
    sync_word_t *buf;
    unsigned capacity, head, count;
    int lock;
};
struct sync_mutex {
    int lock;
};
struct sync_barrier {
    unsigned parties, arrived, generation;
};
struct sync_semaphore {
    long count;
};
typedef struct sync_channel *sync_channel_t;
typedef struct sync_mutex *sync_mutex_t;
typedef struct sync_barrier *sync_barrier_t;
typedef struct sync_semaphore *sync_semaphore_t;

#define SYNC_CHANNEL(name, cap)                                       \
    static sync_word_t name##_buf_[cap];                              \
    static struct sync_channel name##_object_ = {name##_buf_, cap, 0, 0, 0}; \
    static struct sync_channel *const name __attribute__((unused)) = &name##_object_
#define SYNC_MUTEX(name)                                \
    static struct sync_mutex name##_object_ = {0};      \
    static struct sync_mutex *const name __attribute__((unused)) = &name##_object_
#define SYNC_BARRIER(name, parties)                                 \
    static struct sync_barrier name##_object_ = {parties, 0, 0};    \
    static struct sync_barrier *const name __attribute__((unused)) = &name##_object_
#define SYNC_SEMAPHORE(name, initial)                                 \
    static struct sync_semaphore name##_object_ = {initial};          \
    static struct sync_semaphore *const name __attribute__((unused)) = &name##_object_

static inline uint32_t sync_be32_(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The /cpus/cpu@… nodes of the flattened device tree at mscratch. */
static unsigned sync_count_cpus_(void)
{
    const uint8_t *fdt;
    __asm__ volatile("csrr %0, mscratch" : "=r"(fdt));
    if (fdt == 0 || sync_be32_(fdt) != 0xd00dfeedu)
        return 1;
    const uint8_t *p = fdt + sync_be32_(fdt + 8); /* off_dt_struct */
    int depth = 0, in_cpus = 0;
    unsigned n = 0;
    for (;;) {
        uint32_t token = sync_be32_(p);
        p += 4;
        if (token == 1) { /* FDT_BEGIN_NODE, then the NUL-terminated name */
            const char *name = (const char *)p;
            depth++;
            if (depth == 2)
                in_cpus = strcmp(name, "cpus") == 0;
            else if (depth == 3 && in_cpus && strncmp(name, "cpu@", 4) == 0)
                n++;
            p += (strlen(name) + 4) & ~(size_t)3;
        } else if (token == 2) { /* FDT_END_NODE */
            depth--;
        } else if (token == 3) { /* FDT_PROP: length, name offset, value */
            p += 8 + ((sync_be32_(p) + 3) & ~3u);
        } else if (token != 4) { /* FDT_END (9), or damage */
            break;
        }
    }
    return n ? n : 1;
}

static unsigned sync_harts_cache_;
static inline unsigned sync_harts(void)
{
    unsigned n = __atomic_load_n(&sync_harts_cache_, __ATOMIC_ACQUIRE);
    if (n == 0) {
        n = sync_count_cpus_();
        __atomic_store_n(&sync_harts_cache_, n, __ATOMIC_RELEASE);
    }
    return n;
}

/* A waiting hart watches the count without the lock and takes the lock
 * only when there may be room (or a word): a hart that spun with the lock
 * taken half the time would hold it whenever it was preempted, and stall
 * the hart it waits for. */
static inline void sync_send(sync_channel_t c, sync_word_t v)
{
    for (;;) {
        while (__atomic_load_n(&c->count, __ATOMIC_RELAXED) >= c->capacity)
            ;
        sync_spin_lock_(&c->lock);
        if (c->count < c->capacity) {
            c->buf[(c->head + c->count) % c->capacity] = v;
            __atomic_store_n(&c->count, c->count + 1, __ATOMIC_RELAXED);
            sync_spin_unlock_(&c->lock);
            return;
        }
        sync_spin_unlock_(&c->lock);
    }
}

static inline sync_word_t sync_recv(sync_channel_t c)
{
    for (;;) {
        while (__atomic_load_n(&c->count, __ATOMIC_RELAXED) == 0)
            ;
        sync_spin_lock_(&c->lock);
        if (c->count > 0) {
            sync_word_t v = c->buf[c->head];
            c->head = (c->head + 1) % c->capacity;
            __atomic_store_n(&c->count, c->count - 1, __ATOMIC_RELAXED);
            sync_spin_unlock_(&c->lock);
            return v;
        }
        sync_spin_unlock_(&c->lock);
    }
}

static inline void sync_lock(sync_mutex_t m) { sync_spin_lock_(&m->lock); }
static inline void sync_unlock(sync_mutex_t m) { sync_spin_unlock_(&m->lock); }

/* A sense-reversing barrier: the last to arrive resets the count and moves
 * the generation on, which releases the others. */
static inline int sync_barrier(sync_barrier_t b)
{
    unsigned parties = b->parties ? b->parties : sync_harts();
    unsigned gen = __atomic_load_n(&b->generation, __ATOMIC_ACQUIRE);
    if (__atomic_fetch_add(&b->arrived, 1, __ATOMIC_ACQ_REL) + 1 == parties) {
        __atomic_store_n(&b->arrived, 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&b->generation, 1, __ATOMIC_RELEASE);
        return 1;
    }
    while (__atomic_load_n(&b->generation, __ATOMIC_ACQUIRE) == gen)
        ;
    return 0;
}

/* P by compare-and-swap (an LR/SC loop), V by amoadd. */
static inline void sync_sem_wait(sync_semaphore_t s)
{
    for (;;) {
        long c = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
        if (c > 0 &&
            __atomic_compare_exchange_n(&s->count, &c, c - 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
    }
}
static inline void sync_sem_post(sync_semaphore_t s) { __atomic_fetch_add(&s->count, 1, __ATOMIC_RELEASE); }
/* Frequency is the simulator's to time; real hardware has its own means. */
static inline void sync_set_hz(unsigned long hz) { (void)hz; }

/* The secondary harts spin on the worker pointer: nothing to release. */
#define SYNC_WAIT_FOR_START ""
static inline void sync_release_(unsigned harts) { (void)harts; }

static void sync_hart_done_(void)
{
    for (;;)
        __asm__ volatile("wfi");
}

#endif /* RETRACE_PROGRAMS_SYNC_ATOMIC_H */
