/*
 * sync.h: several harts in one program, and the synchronisation objects
 * they share — channels, mutexes, barriers and semaphores.
 *
 * Two implementations behind one interface (docs/MULTIPROCESSOR.md):
 *  - by default, environment calls to retrace's synchronisation API
 *    (`ecall` with a7 = SYNC_CALL_BASE + call): blocking is the
 *    simulator's business, each call is a synchronisation point it can
 *    record, and a deadlock is reported, naming every waiting hart;
 *  - with -DSYNC_ATOMIC, sync_atomic.h: the same objects built from RISC-V
 *    atomics only (AMOs and LR/SC through the compiler's __atomic
 *    builtins), spinning where the first blocks, so that the same source
 *    runs on any RISC-V machine — `qemu-system-riscv32/64 -smp N` is the
 *    oracle the tests compare retrace with.
 *
 * Start-up. Every hart starts at the ELF entry with a0 = its mhartid (QEMU
 * virt's reset code does so with -bios none, and so does retrace). The entry
 * is _sync_entry below (link with -e _sync_entry): hart 0 goes on to the C
 * run-time's _start and main(); the others wait, without a stack, until
 * main() calls sync_start(worker), then each runs worker(its id) on a stack
 * of its own and stops when it returns. Secondary harts have no C run-time
 * of their own: they must not call the C library (printf, malloc, anything
 * that sets errno); hart 0 prints, after joining them.
 *
 * Objects are declared statically, Zephyr-style, and used by name:
 *   SYNC_CHANNEL(ch, 4);     sync_send(ch, v);  v = sync_recv(ch);
 *   SYNC_MUTEX(m);           sync_lock(m);      sync_unlock(m);
 *   SYNC_BARRIER(b, 0);      if (sync_barrier(b)) { ... one hart ... }
 *   SYNC_SEMAPHORE(s, 0);    sync_sem_wait(s);  sync_sem_post(s);
 * A hart changes its own clock frequency (dynamic voltage and frequency
 * scaling) with sync_set_hz(hz): it changes the timing of what follows,
 * never the result (the atomics build ignores it).
 * A barrier for 0 parties waits for every hart. sync_barrier() returns 1
 * in exactly one of the harts it releases (which one may differ between
 * the implementations), 0 in the others.
 */
#ifndef RETRACE_PROGRAMS_SYNC_H
#define RETRACE_PROGRAMS_SYNC_H

#include <stdint.h>

/* Harts with a stack of their own; more harts than this are parked. */
#ifndef SYNC_MAX_HARTS
#define SYNC_MAX_HARTS 16
#endif
#define SYNC_STACK_BYTES 8192

/* A word passed through a channel: a register's width. */
typedef long sync_word_t;

/* The hart this code runs on. */
static inline unsigned sync_hart_id(void)
{
    unsigned long id;
    __asm__ volatile("csrr %0, mhartid" : "=r"(id));
    return (unsigned)id;
}

#define SYNC_STR_(x) #x
#define SYNC_STR(x) SYNC_STR_(x)
#if __riscv_xlen == 64
#define SYNC_LOAD_PTR "ld"
#else
#define SYNC_LOAD_PTR "lw"
#endif

/* The worker the secondary harts run (set by sync_start). */
__attribute__((used)) static void (*volatile sync_worker_)(unsigned);
/* The secondary harts' stacks: hart h's is the h-th (hart 0 has the C
 * run-time's, so the first serves parked harts). */
__attribute__((used, aligned(16))) static uint8_t sync_stacks_[SYNC_MAX_HARTS][SYNC_STACK_BYTES];
/* How a secondary hart stops when its worker returns. */
__attribute__((used, noreturn)) static void sync_hart_done_(void);

#ifdef SYNC_ATOMIC
#include "sync_atomic.h"
#else

/* ---- retrace's synchronisation API: one ecall per operation ---- */

#define SYNC_CALL_BASE 0x53590000
#define SYNC_MAGIC 0x53594e43u
enum {
    SYNC_HARTS = 0,
    SYNC_HART_EXIT = 1,
    SYNC_SEND = 2,
    SYNC_RECV = 3,
    SYNC_LOCK = 4,
    SYNC_UNLOCK = 5,
    SYNC_BARRIER_WAIT = 6,
    SYNC_SEM_WAIT = 7,
    SYNC_SEM_POST = 8,
    SYNC_SET_HZ = 9,
};
enum { SYNC_KIND_CHANNEL = 1, SYNC_KIND_MUTEX = 2, SYNC_KIND_BARRIER = 3, SYNC_KIND_SEMAPHORE = 4 };

/* An object's descriptor: the handle is its address. The simulator reads
 * it on first use and keeps the object's state itself, so it is constant
 * (and in the loaded image from the start, before any start-up code). */
struct sync_object {
    uint32_t magic, kind, param, reserved;
};
typedef const struct sync_object *sync_channel_t;
typedef const struct sync_object *sync_mutex_t;
typedef const struct sync_object *sync_barrier_t;
typedef const struct sync_object *sync_semaphore_t;

#define SYNC_OBJECT_(name, kind, param)                                              \
    static const struct sync_object name##_object_ = {SYNC_MAGIC, kind, param, 0}; \
    static const struct sync_object *const name __attribute__((unused)) = &name##_object_
#define SYNC_CHANNEL(name, capacity) SYNC_OBJECT_(name, SYNC_KIND_CHANNEL, capacity)
#define SYNC_MUTEX(name) SYNC_OBJECT_(name, SYNC_KIND_MUTEX, 0)
#define SYNC_BARRIER(name, parties) SYNC_OBJECT_(name, SYNC_KIND_BARRIER, parties)
#define SYNC_SEMAPHORE(name, initial) SYNC_OBJECT_(name, SYNC_KIND_SEMAPHORE, initial)

static inline long sync_call_(long call, const void *object, long value)
{
    register long a0 __asm__("a0") = (long)object;
    register long a1 __asm__("a1") = value;
    register long a7 __asm__("a7") = SYNC_CALL_BASE + call;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a7) : "memory");
    return a0;
}

static inline unsigned sync_harts(void) { return (unsigned)sync_call_(SYNC_HARTS, 0, 0); }
static inline void sync_send(sync_channel_t c, sync_word_t v) { sync_call_(SYNC_SEND, c, v); }
static inline sync_word_t sync_recv(sync_channel_t c) { return sync_call_(SYNC_RECV, c, 0); }
static inline void sync_lock(sync_mutex_t m) { sync_call_(SYNC_LOCK, m, 0); }
static inline void sync_unlock(sync_mutex_t m) { sync_call_(SYNC_UNLOCK, m, 0); }
static inline int sync_barrier(sync_barrier_t b) { return (int)sync_call_(SYNC_BARRIER_WAIT, b, 0); }
static inline void sync_sem_wait(sync_semaphore_t s) { sync_call_(SYNC_SEM_WAIT, s, 0); }
static inline void sync_sem_post(sync_semaphore_t s) { sync_call_(SYNC_SEM_POST, s, 0); }
static inline void sync_set_hz(unsigned long hz) { sync_call_(SYNC_SET_HZ, 0, (long)hz); }

/* The secondary harts wait at this semaphore, blocked rather than
 * spinning, until sync_start posts it once for each of them. */
__attribute__((used)) static const struct sync_object sync_go_ = {SYNC_MAGIC, SYNC_KIND_SEMAPHORE, 0, 0};
#define SYNC_WAIT_FOR_START                                    \
    "  li a7, " SYNC_STR(SYNC_CALL_BASE) " + 7\n"              \
    "  la a0, sync_go_\n"                                      \
    "  ecall\n"
static inline void sync_release_(unsigned harts)
{
    for (unsigned h = 1; h < harts; h++)
        sync_call_(SYNC_SEM_POST, &sync_go_, 0);
}

static void sync_hart_done_(void)
{
    for (;;)
        sync_call_(SYNC_HART_EXIT, 0, 0);
}

#endif /* SYNC_ATOMIC */

/*
 * The entry of every hart. Hart 0 saves a1 (the device tree, which the
 * atomics build reads the hart count from) in mscratch and enters the C
 * run-time. The others set up gp and a stack, wait for sync_start (in the
 * ecall build blocked at a semaphore, in the atomics build spinning on the
 * worker pointer, which is in .bss and so 0 until hart 0 sets it — the C
 * run-time's zeroing of .bss writes the 0 that is already there), run the
 * worker and stop. The global pointer is loaded without relaxation: the
 * linker would otherwise turn `la gp` into an access relative to gp.
 */
__asm__(".section .text.init.enter, \"ax\", @progbits\n"
        ".globl _sync_entry\n"
        "_sync_entry:\n"
        "  csrw mscratch, a1\n"
        "  csrr s0, mhartid\n"
        "  beqz s0, 9f\n"
        ".option push\n"
        ".option norelax\n"
        "  la gp, __global_pointer$\n"
        ".option pop\n"
        "  li t0, " SYNC_STR(SYNC_MAX_HARTS) "\n"
        "  li t2, " SYNC_STR(SYNC_STACK_BYTES) "\n"
        "  la sp, sync_stacks_\n"
        "  add sp, sp, t2\n"
        "  bgeu s0, t0, 2f\n"
        "  mul t0, s0, t2\n"
        "  add sp, sp, t0\n"
        SYNC_WAIT_FOR_START
        "  la s1, sync_worker_\n"
        "1:" SYNC_LOAD_PTR " t1, 0(s1)\n"
        "  beqz t1, 1b\n"
        "  fence r, rw\n"
        "  mv tp, zero\n"
        "  mv a0, s0\n"
        "  jalr t1\n"
        /* Harts beyond SYNC_MAX_HARTS share the one stack no hart uses
         * (hart 0 runs on the C run-time's). */
        "2:j sync_hart_done_\n"
        "9:j _start\n"
        ".previous\n");

/*
 * Called by main() on hart 0: starts worker(hart) on every other hart and
 * returns the number of harts. With more harts than SYNC_MAX_HARTS it
 * returns 0 and starts nothing (the caller reports it).
 */
static inline unsigned sync_start(void (*worker)(unsigned))
{
    unsigned n = sync_harts();
    if (n > SYNC_MAX_HARTS)
        return 0;
    __atomic_store_n(&sync_worker_, worker, __ATOMIC_RELEASE);
    sync_release_(n);
    return n;
}

#endif /* RETRACE_PROGRAMS_SYNC_H */
