#!/usr/bin/env bash
# Build the example programs and the ISA self-check tests' inputs:
#   programs/build.sh [OUTDIR]        (default: programs/bin)
#
# Every program is built for rv32imac/ilp32 and rv64imac/lp64 at -O2; the
# programs in EXTRA_OPT are also built at -O0 and -Os. Output names:
#   OUTDIR/<name>-rv32-O2.elf, OUTDIR/<name>-rv64-Os.elf, ...
#
# The floating-point programs, src/fp/*.c, are built for rv32imafc/ilp32f
# and rv64gc/lp64d at -O2 into OUTDIR/fp/.
#
# The multi-hart programs, src/mp/*.c (docs/MULTIPROCESSOR.md), are built
# twice per XLEN at -O2, against sync.h's two implementations:
#   OUTDIR/mp/<name>-rv32-O2.elf         retrace's synchronisation ecalls
#   OUTDIR/mp/<name>-rv32-O2-atomic.elf  RISC-V atomics only (runs on QEMU -smp N)
#
# The build is reproducible: it compiles from inside programs/ with relative
# paths and maps the directory away (-ffile-prefix-map), so neither the
# checkout location nor the output directory ends up in the files, and the
# toolchain adds no timestamps. Building twice gives identical bytes;
# programs/check-current.sh relies on that.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

CC="${CC:-riscv64-unknown-elf-gcc}"

# Programs that are also built at -O0 and -Os (small enough that -O0 stays fast).
EXTRA_OPT="crc32 nqueens exprparse"

# DESIGN.md, "The target: RISC-V": picolibc with semihosting, code at
# 0x80000000 (QEMU virt's -bios none entry), 2 MiB RAM after it.
common=(
  --specs=picolibc.specs --oslib=semihost --crt0=semihost
  -std=c11 -Wall -Wextra -Werror -g
  "-ffile-prefix-map=$here=."
  -Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x200000
  -Wl,--defsym=__ram=0x80200000 -Wl,--defsym=__ram_size=0x200000
  -Wl,--build-id=none
)
rv32=(-march=rv32imac -mabi=ilp32)
rv64=(-march=rv64imac -mabi=lp64 -mcmodel=medany)

cd "$here"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0

build() { # name xlen opt
  local name="$1" xlen="$2" opt="$3" arch
  if [ "$xlen" = rv32 ]; then arch=("${rv32[@]}"); else arch=("${rv64[@]}"); fi
  # Programs that write their own code need `fence.i`: ISA spec 2.2 still
  # counts it in the base ISA, so the multilib (rv32imac/rv64imac) stays the
  # same (`-march=..._zifencei` would pick none) and objdump decodes it.
  case "$name" in
    selfmod) arch+=(-misa-spec=2.2) ;;
  esac
  "$CC" "${arch[@]}" "${common[@]}" "-$opt" -Isrc -o "$out/$name-$xlen-$opt.elf" "src/$name.c"
}

n=0
for src in src/*.c; do
  name="$(basename "$src" .c)"
  for xlen in rv32 rv64; do
    build "$name" "$xlen" O2
    n=$((n + 1))
    case " $EXTRA_OPT " in
      *" $name "*)
        build "$name" "$xlen" O0
        build "$name" "$xlen" Os
        n=$((n + 2))
        ;;
    esac
  done
done
# Multi-hart programs: every hart starts at 0x80000000 (QEMU virt with
# -bios none jumps there whatever the ELF's entry says), so sync.h's entry
# code, in .text.init.enter, must come before the C run-time's: the program
# is linked before crt0 (-nostartfiles, crt0 named after the source), and
# the entry symbol is set for simulators that read it. -misa-spec=2.2 counts
# Zicsr in the base ISA (the entry code reads mhartid) without changing the
# multilib.
mkdir -p "$out/mp"
build_mp() { # name xlen variant
  local name="$1" xlen="$2" variant="$3" arch suffix="" define=()
  if [ "$xlen" = rv32 ]; then arch=("${rv32[@]}"); else arch=("${rv64[@]}"); fi
  if [ "$variant" = atomic ]; then suffix=-atomic; define=(-DSYNC_ATOMIC); fi
  "$CC" "${arch[@]}" -misa-spec=2.2 "${common[@]}" -nostartfiles -Wl,-e,_sync_entry \
    -O2 -Isrc "${define[@]}" -o "$out/mp/$name-$xlen-O2$suffix.elf" "src/mp/$name.c" \
    -l:crt0-semihost.o
}
for src in src/mp/*.c; do
  name="$(basename "$src" .c)"
  for xlen in rv32 rv64; do
    for variant in ecall atomic; do
      build_mp "$name" "$xlen" "$variant"
      n=$((n + 1))
    done
  done
done
# Floating-point programs, src/fp/*.c (programs/README.md, "Floating-point
# programs"): single precision in hardware on RV32 (rv32imafc/ilp32f),
# double on RV64 (rv64gc/lp64d); both multilibs come with picolibc. Kept
# in their own directory: they need F or D, which a core model or a
# simulator without them must refuse, while programs/bin/ runs everywhere.
mkdir -p "$out/fp"
for src in src/fp/*.c; do
  name="$(basename "$src" .c)"
  "$CC" -march=rv32imafc -mabi=ilp32f "${common[@]}" -O2 -Isrc \
    -o "$out/fp/$name-rv32-O2.elf" "$src" -lm
  "$CC" -march=rv64gc -mabi=lp64d -mcmodel=medany "${common[@]}" -O2 -Isrc \
    -o "$out/fp/$name-rv64-O2.elf" "$src" -lm
  n=$((n + 2))
done
echo "built $n programs into $out"
