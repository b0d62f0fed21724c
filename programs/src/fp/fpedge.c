/*
 * fpedge: F and D instructions on edge values, one line per case, for a
 * line-by-line comparison of simulators (tests/fp_qemu.rs).
 *
 * Every case runs one instruction in inline assembly between `fsflags x0`
 * and `frflags`, and prints the operation's number, the operand bits, the
 * rounding mode and the result bits with the accrued flags (NV DZ OF UF NX
 * as in fflags). Rounding modes: the five static ones (0-4, in the
 * instruction) and, as 5, the dynamic one with frm = RDN. The values are
 * signed zeros, the smallest and largest subnormals and normals,
 * infinities, quiet and signalling NaNs, and numbers whose results round,
 * overflow or underflow. Then the cases that must trap as illegal
 * instructions: a reserved rounding mode in frm, and FP instructions and
 * CSRs with mstatus.FS Off; a handler of its own skips the instruction and
 * the program prints mcause and mtval.
 *
 * rv32imafc/ilp32f: single precision only; rv64gc/lp64d: single and
 * double, and the conversions to and from 64-bit integers.
 * Inputs: none. Output: the lines, then "fpedge: checksum ...".
 */
#include "fp.h"

static uint32_t h = 2166136261u;
static unsigned long lines;

/* One result line, folded into the checksum as well. */
static void line(unsigned op, uint64_t a, uint64_t b, uint64_t c, int rm, uint64_t r, unsigned fl)
{
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%02x %llx %llx %llx %d: %llx %02x\n", op,
                     (unsigned long long)a, (unsigned long long)b, (unsigned long long)c, rm,
                     (unsigned long long)r, fl);
    fputs(buf, stdout);
    for (int i = 0; i < n; i++) {
        h ^= (unsigned char)buf[i];
        h *= 16777619u;
    }
    lines++;
}

#define UNPAREN(...) __VA_ARGS__
/* Run TEXT (an instruction without its rounding mode) under rounding mode
 * rm (0-4 static, 5 dynamic with frm = RDN), with fflags cleared before and
 * read into %1 after. */
#define WITH_RM(rm, text, outs, ins)                                                              \
    do {                                                                                          \
        switch (rm) {                                                                             \
        case 0: __asm__ volatile("fsflags x0\n\t" text ", rne\n\tfrflags %1" : UNPAREN outs : UNPAREN ins); break; \
        case 1: __asm__ volatile("fsflags x0\n\t" text ", rtz\n\tfrflags %1" : UNPAREN outs : UNPAREN ins); break; \
        case 2: __asm__ volatile("fsflags x0\n\t" text ", rdn\n\tfrflags %1" : UNPAREN outs : UNPAREN ins); break; \
        case 3: __asm__ volatile("fsflags x0\n\t" text ", rup\n\tfrflags %1" : UNPAREN outs : UNPAREN ins); break; \
        case 4: __asm__ volatile("fsflags x0\n\t" text ", rmm\n\tfrflags %1" : UNPAREN outs : UNPAREN ins); break; \
        default:                                                                                  \
            __asm__ volatile("fsrmi 2\n\tfsflags x0\n\t" text ", dyn\n\tfrflags %1\n\tfsrmi 0" : UNPAREN outs : UNPAREN ins); \
            break;                                                                                \
        }                                                                                         \
    } while (0)
/* The same without a rounding mode (sign injection, min/max, compares). */
#define NO_RM(text, outs, ins) __asm__ volatile("fsflags x0\n\t" text "\n\tfrflags %1" : UNPAREN outs : UNPAREN ins)

static float fs(uint32_t b) { float v; memcpy(&v, &b, 4); return v; }

static const uint32_t S[] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x00000001, 0x807fffff, 0x00800000,
    0x80800001, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
    0xffc00123, 0x3fc00000, 0x3eaaaaab, 0x4b800001, 0xcf000000, 0x4f000000, 0x5f000000,
    0xdf000001, 0x40490fdb, 0x0c000000, 0x33800001,
};
#define NS (sizeof S / sizeof S[0])

/* Single precision: binary, unary, fused, conversions. */
static void single(void)
{
    for (unsigned i = 0; i < NS; i++)
        for (unsigned j = 0; j < NS; j++) {
            float a = fs(S[i]), b = fs(S[j]), d;
            uint32_t fl;
            long r;
            for (int rm = 0; rm < 6; rm++) {
                WITH_RM(rm, "fadd.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x01, S[i], S[j], 0, rm, bits_f(d), fl);
                WITH_RM(rm, "fsub.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x02, S[i], S[j], 0, rm, bits_f(d), fl);
                WITH_RM(rm, "fmul.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x03, S[i], S[j], 0, rm, bits_f(d), fl);
                WITH_RM(rm, "fdiv.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x04, S[i], S[j], 0, rm, bits_f(d), fl);
            }
            NO_RM("fmin.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x05, S[i], S[j], 0, 0, bits_f(d), fl);
            NO_RM("fmax.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x06, S[i], S[j], 0, 0, bits_f(d), fl);
            NO_RM("fsgnj.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x07, S[i], S[j], 0, 0, bits_f(d), fl);
            NO_RM("fsgnjn.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x08, S[i], S[j], 0, 0, bits_f(d), fl);
            NO_RM("fsgnjx.s %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x09, S[i], S[j], 0, 0, bits_f(d), fl);
            NO_RM("feq.s %0, %2, %3", ("=&r"(r), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x0a, S[i], S[j], 0, 0, (uint64_t)r, fl);
            NO_RM("flt.s %0, %2, %3", ("=&r"(r), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x0b, S[i], S[j], 0, 0, (uint64_t)r, fl);
            NO_RM("fle.s %0, %2, %3", ("=&r"(r), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x0c, S[i], S[j], 0, 0, (uint64_t)r, fl);
        }
    /* Fused multiply-add over a pseudo-random third of the triples. */
    rng_t g;
    rng_seed(&g, 7);
    for (unsigned i = 0; i < NS; i++)
        for (unsigned j = 0; j < NS; j++)
            for (unsigned k = 0; k < NS; k++) {
                if (rng_below(&g, 8) != 0)
                    continue;
                float a = fs(S[i]), b = fs(S[j]), c = fs(S[k]), d;
                uint32_t fl;
                int rm = (int)rng_below(&g, 6);
                WITH_RM(rm, "fmadd.s %0, %2, %3, %4", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b), "f"(c)));
                line(0x10, S[i], S[j], S[k], rm, bits_f(d), fl);
                WITH_RM(rm, "fmsub.s %0, %2, %3, %4", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b), "f"(c)));
                line(0x11, S[i], S[j], S[k], rm, bits_f(d), fl);
                WITH_RM(rm, "fnmsub.s %0, %2, %3, %4", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b), "f"(c)));
                line(0x12, S[i], S[j], S[k], rm, bits_f(d), fl);
                WITH_RM(rm, "fnmadd.s %0, %2, %3, %4", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b), "f"(c)));
                line(0x13, S[i], S[j], S[k], rm, bits_f(d), fl);
            }
    for (unsigned i = 0; i < NS; i++) {
        float a = fs(S[i]), d;
        uint32_t fl;
        long r;
        for (int rm = 0; rm < 6; rm++) {
            WITH_RM(rm, "fsqrt.s %0, %2", ("=&f"(d), "=r"(fl)), ("f"(a)));
            line(0x20, S[i], 0, 0, rm, bits_f(d), fl);
            WITH_RM(rm, "fcvt.w.s %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x21, S[i], 0, 0, rm, (uint64_t)r, fl);
            WITH_RM(rm, "fcvt.wu.s %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x22, S[i], 0, 0, rm, (uint64_t)r, fl);
#if __riscv_xlen == 64
            WITH_RM(rm, "fcvt.l.s %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x23, S[i], 0, 0, rm, (uint64_t)r, fl);
            WITH_RM(rm, "fcvt.lu.s %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x24, S[i], 0, 0, rm, (uint64_t)r, fl);
#endif
        }
        NO_RM("fclass.s %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
        line(0x25, S[i], 0, 0, 0, (uint64_t)r, fl);
        NO_RM("fmv.x.w %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
        line(0x26, S[i], 0, 0, 0, (uint64_t)r, fl);
    }
}

/* Integers at the edges of what a single or a double holds exactly. */
static const uint64_t I[] = {
    0, 1, 0xffffffffffffffffull, 0x7fffffff, 0x80000000, 0xffffffff, 0x01000001, 0xfffffffffeffffffull,
    0x7fffffffffffffffull, 0x8000000000000000ull, 0x0020000000000001ull, 0x123456789abcdefull,
};
#define NI (sizeof I / sizeof I[0])

static void from_int(void)
{
    for (unsigned i = 0; i < NI; i++) {
        long v = (long)I[i];
        float d;
        uint32_t fl;
        for (int rm = 0; rm < 6; rm++) {
            WITH_RM(rm, "fcvt.s.w %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
            line(0x30, I[i], 0, 0, rm, bits_f(d), fl);
            WITH_RM(rm, "fcvt.s.wu %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
            line(0x31, I[i], 0, 0, rm, bits_f(d), fl);
#if __riscv_xlen == 64
            WITH_RM(rm, "fcvt.s.l %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
            line(0x32, I[i], 0, 0, rm, bits_f(d), fl);
            WITH_RM(rm, "fcvt.s.lu %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
            line(0x33, I[i], 0, 0, rm, bits_f(d), fl);
#endif
        }
        NO_RM("fmv.w.x %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
        line(0x34, I[i], 0, 0, 0, bits_f(d), fl);
    }
}

#if __riscv_flen == 64
static double fd(uint64_t b) { double v; memcpy(&v, &b, 8); return v; }

static const uint64_t D[] = {
    0, 0x8000000000000000ull, 0x3ff0000000000000ull, 0xbff0000000000000ull, 1, 0x800fffffffffffffull,
    0x0010000000000000ull, 0x7fefffffffffffffull, 0xffefffffffffffffull, 0x7ff0000000000000ull,
    0xfff0000000000000ull, 0x7ff8000000000000ull, 0x7ff0000000000001ull, 0xfff8000000000abcull,
    0x3fd5555555555555ull, 0x41e0000000000000ull, 0xc1e0000000200000ull, 0x43e0000000000000ull,
    0x47efffffe0000000ull, 0x36a0000000000000ull, 0x3810000000000001ull, 0x400921fb54442d18ull,
};
#define ND (sizeof D / sizeof D[0])

static void dbl(void)
{
    for (unsigned i = 0; i < ND; i++)
        for (unsigned j = 0; j < ND; j++) {
            double a = fd(D[i]), b = fd(D[j]), d;
            uint32_t fl;
            long r;
            for (int rm = 0; rm < 6; rm += 1 + (i + j) % 2) {
                WITH_RM(rm, "fadd.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x41, D[i], D[j], 0, rm, bits_d(d), fl);
                WITH_RM(rm, "fsub.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x42, D[i], D[j], 0, rm, bits_d(d), fl);
                WITH_RM(rm, "fmul.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x43, D[i], D[j], 0, rm, bits_d(d), fl);
                WITH_RM(rm, "fdiv.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
                line(0x44, D[i], D[j], 0, rm, bits_d(d), fl);
            }
            NO_RM("fmin.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x45, D[i], D[j], 0, 0, bits_d(d), fl);
            NO_RM("fmax.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x46, D[i], D[j], 0, 0, bits_d(d), fl);
            NO_RM("fsgnjx.d %0, %2, %3", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x49, D[i], D[j], 0, 0, bits_d(d), fl);
            NO_RM("flt.d %0, %2, %3", ("=&r"(r), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x4b, D[i], D[j], 0, 0, (uint64_t)r, fl);
            NO_RM("fle.d %0, %2, %3", ("=&r"(r), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x4c, D[i], D[j], 0, 0, (uint64_t)r, fl);
            NO_RM("feq.d %0, %2, %3", ("=&r"(r), "=r"(fl)), ("f"(a), "f"(b)));
            line(0x4a, D[i], D[j], 0, 0, (uint64_t)r, fl);
        }
    rng_t g;
    rng_seed(&g, 11);
    for (unsigned i = 0; i < ND; i++)
        for (unsigned j = 0; j < ND; j++)
            for (unsigned k = 0; k < ND; k++) {
                if (rng_below(&g, 10) != 0)
                    continue;
                double a = fd(D[i]), b = fd(D[j]), c = fd(D[k]), d;
                uint32_t fl;
                int rm = (int)rng_below(&g, 6);
                WITH_RM(rm, "fmadd.d %0, %2, %3, %4", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b), "f"(c)));
                line(0x50, D[i], D[j], D[k], rm, bits_d(d), fl);
                WITH_RM(rm, "fnmadd.d %0, %2, %3, %4", ("=&f"(d), "=r"(fl)), ("f"(a), "f"(b), "f"(c)));
                line(0x53, D[i], D[j], D[k], rm, bits_d(d), fl);
            }
    for (unsigned i = 0; i < ND; i++) {
        double a = fd(D[i]), d;
        float s;
        uint32_t fl;
        long r;
        for (int rm = 0; rm < 6; rm++) {
            WITH_RM(rm, "fsqrt.d %0, %2", ("=&f"(d), "=r"(fl)), ("f"(a)));
            line(0x60, D[i], 0, 0, rm, bits_d(d), fl);
            WITH_RM(rm, "fcvt.w.d %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x61, D[i], 0, 0, rm, (uint64_t)r, fl);
            WITH_RM(rm, "fcvt.wu.d %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x62, D[i], 0, 0, rm, (uint64_t)r, fl);
            WITH_RM(rm, "fcvt.l.d %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x63, D[i], 0, 0, rm, (uint64_t)r, fl);
            WITH_RM(rm, "fcvt.lu.d %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
            line(0x64, D[i], 0, 0, rm, (uint64_t)r, fl);
            WITH_RM(rm, "fcvt.s.d %0, %2", ("=&f"(s), "=r"(fl)), ("f"(a)));
            line(0x65, D[i], 0, 0, rm, bits_f(s), fl);
        }
        NO_RM("fclass.d %0, %2", ("=&r"(r), "=r"(fl)), ("f"(a)));
        line(0x66, D[i], 0, 0, 0, (uint64_t)r, fl);
    }
    for (unsigned i = 0; i < NS; i++) {
        float a = fs(S[i]);
        double d;
        uint32_t fl;
        NO_RM("fcvt.d.s %0, %2", ("=&f"(d), "=r"(fl)), ("f"(a)));
        line(0x67, S[i], 0, 0, 0, bits_d(d), fl);
    }
    for (unsigned i = 0; i < NI; i++) {
        long v = (long)I[i];
        double d;
        uint32_t fl;
        for (int rm = 0; rm < 6; rm++) {
            WITH_RM(rm, "fcvt.d.l %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
            line(0x68, I[i], 0, 0, rm, bits_d(d), fl);
            WITH_RM(rm, "fcvt.d.lu %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
            line(0x69, I[i], 0, 0, rm, bits_d(d), fl);
        }
        NO_RM("fcvt.d.w %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
        line(0x6a, I[i], 0, 0, 0, bits_d(d), fl);
        NO_RM("fcvt.d.wu %0, %2", ("=&f"(d), "=r"(fl)), ("r"(v)));
        line(0x6b, I[i], 0, 0, 0, bits_d(d), fl);
    }
    /* A single that is not NaN-boxed reads as the canonical NaN. */
    {
        float d;
        uint32_t fl;
        long bad = 0x3f800000; /* upper half zero */
        __asm__ volatile("fsflags x0\n\tfmv.d.x ft0, %2\n\tfadd.s %0, ft0, ft0\n\tfrflags %1"
                         : "=&f"(d), "=r"(fl) : "r"(bad) : "ft0");
        line(0x6c, (uint64_t)bad, 0, 0, 0, bits_f(d), fl);
    }
}
#endif

/* The trap handler for the illegal cases: skip the 4-byte instruction. */
__asm__(".text\n.align 2\nfpedge_trap:\n"
        "\tcsrw mscratch, t0\n\tcsrr t0, mepc\n\taddi t0, t0, 4\n\tcsrw mepc, t0\n"
        "\tcsrr t0, mscratch\n\tmret\n");

static void traps(void)
{
    unsigned long old, cause, tval, status;
    __asm__ volatile("la %0, fpedge_trap\n\tcsrrw %0, mtvec, %0" : "=&r"(old));
    /* Reserved rounding modes in frm, used by a dynamic-rounding add. */
    for (unsigned frm = 4; frm < 8; frm++) {
        __asm__ volatile("csrw mcause, x0\n\tcsrw mtval, x0\n\tfsrm %2\n\t"
                         "fadd.s ft0, ft0, ft0, dyn\n\tfsrmi 0\n\tcsrr %0, mcause\n\tcsrr %1, mtval"
                         : "=&r"(cause), "=&r"(tval) : "r"((unsigned long)frm) : "ft0");
        line(0x70, frm, 0, 0, 7, cause, 0);
        line(0x71, frm, 0, 0, 7, tval, 0);
    }
    /* mstatus.FS Off: an FP instruction, a load and the CSRs are illegal. */
    __asm__ volatile("csrw mcause, x0\n\tli t0, 0x6000\n\tcsrc mstatus, t0\n\t"
                     "fadd.s ft0, ft0, ft0\n\tcsrr %0, mcause\n\tcsrr %1, mtval\n\t"
                     "csrs mstatus, t0"
                     : "=&r"(cause), "=&r"(tval) : : "t0", "ft0");
    line(0x72, 0, 0, 0, 0, cause, 0);
    line(0x73, 0, 0, 0, 0, tval, 0);
    __asm__ volatile("csrw mcause, x0\n\tli t0, 0x6000\n\tcsrc mstatus, t0\n\t"
                     "li %1, 5\n\tfrcsr %1\n\tcsrr %0, mcause\n\tcsrs mstatus, t0"
                     : "=&r"(cause), "=&r"(tval) : : "t0");
    line(0x74, 0, 0, 0, 0, cause, tval);
    /* fcsr's fields: frm above fflags, and the bits above them read 0. */
    __asm__ volatile("li t0, 0xfff\n\tfscsr t0\n\tfrcsr %0\n\tfrrm %1\n\tfscsr x0"
                     : "=&r"(cause), "=&r"(tval) : : "t0");
    line(0x75, 0, 0, 0, 0, cause, tval);
    /* FS is Dirty after all this (mstatus bits 13-14). */
    __asm__ volatile("fmv.w.x ft0, x0\n\tcsrr %0, mstatus" : "=r"(status) : : "ft0");
    line(0x76, 0, 0, 0, 0, status >> 13 & 3, 0);
    __asm__ volatile("csrw mtvec, %0" : : "r"(old));
}

int main(void)
{
    single();
    from_int();
#if __riscv_flen == 64
    dbl();
#endif
    traps();
    printf("fpedge: %lu cases\n", lines);
    return finish("fpedge", h, 0);
}
