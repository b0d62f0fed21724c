/*
 * retrace_lbr_rt.c: the writer runtime of `retrace lbr` (software branch
 * records on CPUs without a Last Branch Record; JP2024157581A's "writer
 * program").
 *
 * Link this file, compiled WITHOUT -fsanitize-coverage, into a build of the
 * program compiled WITH -fsanitize-coverage=trace-pc (gcc or clang).  The
 * compiler then calls __sanitizer_cov_trace_pc() at the start of every basic
 * block it instruments; the return address of that call is a *site*: the
 * address just after the call instruction in that block.  Each call writes
 * the pair (previous site, this site) into a cyclic buffer in shared memory
 * that `retrace lbr record` created and handed over in RETRACE_LBR_FD.
 *
 * A pair is therefore a transition between two instrumented blocks, not one
 * machine branch: between the two sites the program may fall through, take
 * a branch, call or return, or run uninstrumented code (libc).  `retrace lbr
 * convert` turns pairs back into machine branches (see docs/LBR.md).
 *
 * Protocol (one writer thread, one reader; the layout is fixed and checked
 * by the reader, see crates/retrace-lbr/src/ring.rs):
 *   - slots[i & mask] is written, then write_idx is stored with release
 *     order (every RETRACE_LBR_PUBLISH pairs and at exit);
 *   - the reader loads write_idx with acquire order, reads the slots below
 *     it, and stores read_idx with release order;
 *   - when write_idx - read_idx == capacity the writer publishes what it
 *     has and waits (spins, then yields) until the reader frees a slot:
 *     no pair is ever dropped.
 * Both sides count pairs; the writer's count is stored at exit and the
 * reader checks it.
 *
 * Switch values and comparison outcomes.  gcc lowers a `switch` and
 * some conditions after its coverage pass: a range check and a jump table
 * both leading to the default case, case blocks or edge blocks that only
 * move a value and get no coverage call.  Then several machine paths join
 * the same two sites and a pair alone cannot say which ran.  Built with
 * -fsanitize-coverage=trace-pc,trace-cmp, the compiler also calls
 *   - __sanitizer_cov_trace_switch(value, cases) before each `switch`
 *     dispatches: the value goes into the buffer as one more slot,
 *     (RETRACE_LBR_VALUE_TAG | call site, value), before the pair that
 *     leaves the switch's block, and is counted apart (writer_values);
 *   - __sanitizer_cov_trace_[const_]cmpN(a, b) before each comparison:
 *     the runtime keeps how a compared with b (equal, below unsigned,
 *     below signed: 3 bits) for the last four comparisons since the last
 *     pair, and their number (saturating at 7), in bits 48-62 of the next
 *     pair's `from` (RETRACE_LBR_REL_SHIFT).  Sites are user-space
 *     addresses below 2^47, so neither tag is ever part of an address.
 * `retrace lbr convert` runs the machine code from the site with those
 * values in hand and takes only the ways they lead.
 *
 * Limits of this runtime: only the thread that ran the constructor (the
 * main thread) writes pairs; blocks run by other threads are counted in
 * foreign_calls and reported.  A forked child stops writing (its pairs would
 * interleave with the parent's).  Pairs after the exit handler ran (late
 * destructors) are counted in late_calls.  A process that ends with _exit()
 * or a signal never publishes its last pairs; the reader says so.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sched.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define RETRACE_LBR_MAGIC 0x474e4952524c5452ull /* "RTLRRING" little-endian */
#define RETRACE_LBR_VERSION 1u
#define RETRACE_LBR_PUBLISH 64u
#define RETRACE_LBR_HEADER 4096u
#define RETRACE_LBR_VALUE_TAG (1ull << 63)
#define RETRACE_LBR_REL_SHIFT 48

struct retrace_lbr_header {
    /* line 0: written by the reader before the writer starts */
    uint64_t magic;
    uint32_t version;
    uint32_t capacity_log2;
    uint8_t pad0[48];
    /* line 1: written by the writer only */
    uint64_t write_idx;
    uint8_t pad1[56];
    /* line 2: written by the reader only */
    uint64_t read_idx;
    uint8_t pad2[56];
    /* line 3: the writer's report */
    uint64_t state; /* 0 not attached, 1 attached, 2 finished */
    uint64_t writer_pairs;
    uint64_t writer_waits;
    uint64_t foreign_calls;
    uint64_t late_calls;
    uint64_t writer_pid;
    uint64_t load_ref; /* run-time address of retrace_lbr_runtime_version */
    uint64_t writer_values; /* switch-value slots written */
};

_Static_assert(offsetof(struct retrace_lbr_header, write_idx) == 64, "layout");
_Static_assert(offsetof(struct retrace_lbr_header, read_idx) == 128, "layout");
_Static_assert(offsetof(struct retrace_lbr_header, state) == 192, "layout");
_Static_assert(sizeof(struct retrace_lbr_header) == 256, "layout");

struct retrace_lbr_pair {
    uint64_t from;
    uint64_t to;
};

/* A symbol `retrace lbr record` looks for to tell a writer from a plain build. */
const char retrace_lbr_runtime_version[] = "retrace-lbr-runtime 1";

static struct retrace_lbr_header *hdr;
static struct retrace_lbr_pair *slots;
static uint64_t mask, capacity;
static uint64_t w, cached_r, pairs, values, waits;
static int finished;
static __thread int owner;      /* 1 in the thread that writes */
static __thread uintptr_t prev; /* the previous site of this thread */
/* Comparisons since this thread's last pair, already in place for the
 * pair's `from`: their number (saturating at 7) in bits 48-50, the last four
 * relations (3 bits each, newest lowest) in bits 51-62.  Zero in a writer
 * built without trace-cmp, so trace_pc only reads it. */
static __thread uint64_t rel;

static void publish(void)
{
    __atomic_store_n(&hdr->write_idx, w, __ATOMIC_RELEASE);
}

static void wait_for_room(void)
{
    publish();
    waits++;
    unsigned spins = 0;
    for (;;) {
        cached_r = __atomic_load_n(&hdr->read_idx, __ATOMIC_ACQUIRE);
        if (w - cached_r < capacity)
            return;
        if (++spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else
            sched_yield();
    }
}

static void finish(void)
{
    if (!hdr || finished)
        return;
    finished = 1;
    publish();
    hdr->writer_pairs = pairs;
    hdr->writer_values = values;
    hdr->writer_waits = waits;
    __atomic_store_n(&hdr->state, 2, __ATOMIC_RELEASE);
}

static void forked_child(void)
{
    /* The child shares the mapping but must not write into the parent's ring. */
    hdr = 0;
}

__attribute__((constructor(101))) static void attach(void)
{
    const char *fd_text = getenv("RETRACE_LBR_FD");
    if (!fd_text)
        return; /* run as a plain program */
    int fd = atoi(fd_text);
    unsetenv("RETRACE_LBR_FD"); /* programs it starts do not attach */
    struct retrace_lbr_header probe;
    if (pread(fd, &probe, sizeof probe, 0) != (ssize_t)sizeof probe ||
        probe.magic != RETRACE_LBR_MAGIC || probe.version != RETRACE_LBR_VERSION ||
        probe.capacity_log2 > 40) {
        close(fd);
        return;
    }
    capacity = 1ull << probe.capacity_log2;
    size_t len = RETRACE_LBR_HEADER + capacity * sizeof(struct retrace_lbr_pair);
    void *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return;
    mask = capacity - 1;
    slots = (struct retrace_lbr_pair *)((char *)p + RETRACE_LBR_HEADER);
    hdr = (struct retrace_lbr_header *)p;
    hdr->writer_pid = (uint64_t)getpid();
    /* With the symbol's address in the file this gives the load bias of a
     * position-independent executable. */
    hdr->load_ref = (uint64_t)(uintptr_t)retrace_lbr_runtime_version;
    owner = 1;
    atexit(finish); /* registered first, so it runs after the program's handlers */
    pthread_atfork(0, 0, forked_child);
    __atomic_store_n(&hdr->state, 1, __ATOMIC_RELEASE);
}

/* The slot to write next, after waiting for room; 0 when this call is not
 * recorded (not attached, another thread, after exit; those are counted). */
static inline struct retrace_lbr_pair *next_slot(void)
{
    if (__builtin_expect(hdr == 0, 0))
        return 0;
    if (__builtin_expect(!owner, 0)) {
        __atomic_fetch_add(&hdr->foreign_calls, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (__builtin_expect(finished, 0)) {
        __atomic_fetch_add(&hdr->late_calls, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (__builtin_expect(w - cached_r >= capacity, 0)) {
        cached_r = __atomic_load_n(&hdr->read_idx, __ATOMIC_ACQUIRE);
        if (w - cached_r >= capacity)
            wait_for_room();
    }
    return &slots[w & mask];
}

static inline void advance(void)
{
    w++;
    if ((w & (RETRACE_LBR_PUBLISH - 1)) == 0)
        publish();
}

void __sanitizer_cov_trace_pc(void)
{
    uintptr_t site = (uintptr_t)__builtin_return_address(0);
    struct retrace_lbr_pair *s = next_slot();
    if (!s)
        return;
    uint64_t r = rel;
    s->from = prev | r;
    s->to = site;
    prev = site;
    if (__builtin_expect(r != 0, 0))
        rel = 0;
    pairs++;
    advance();
}

void __sanitizer_cov_trace_switch(uint64_t value, uint64_t *cases)
{
    (void)cases;
    uintptr_t site = (uintptr_t)__builtin_return_address(0);
    struct retrace_lbr_pair *s = next_slot();
    if (!s)
        return;
    s->from = RETRACE_LBR_VALUE_TAG | site;
    s->to = value;
    values++;
    advance();
}

/* How a compared with b: bit 0 equal, bit 1 below (unsigned), bit 2 below
 * (signed, at the comparison's width). */
static inline void relation(int eq, int ult, int slt)
{
    uint64_t n = (rel >> RETRACE_LBR_REL_SHIFT) & 7;
    uint64_t hist = (rel >> (RETRACE_LBR_REL_SHIFT + 3)) & 0xfff;
    hist = ((hist << 3) | (uint64_t)eq | (uint64_t)ult << 1 | (uint64_t)slt << 2) & 0xfff;
    if (n < 7)
        n++;
    rel = (n | hist << 3) << RETRACE_LBR_REL_SHIFT;
}

#define RETRACE_LBR_CMP(name, U, S)                                          \
    void name(U a, U b) { relation(a == b, a < b, (S)a < (S)b); }
RETRACE_LBR_CMP(__sanitizer_cov_trace_cmp1, uint8_t, int8_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_cmp2, uint16_t, int16_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_cmp4, uint32_t, int32_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_cmp8, uint64_t, int64_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_const_cmp1, uint8_t, int8_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_const_cmp2, uint16_t, int16_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_const_cmp4, uint32_t, int32_t)
RETRACE_LBR_CMP(__sanitizer_cov_trace_const_cmp8, uint64_t, int64_t)
/* Floating-point comparisons: counted, their branches not decided. */
void __sanitizer_cov_trace_cmpf(float a, float b) { relation(a == b, a < b, a < b); }
void __sanitizer_cov_trace_cmpd(double a, double b) { relation(a == b, a < b, a < b); }
