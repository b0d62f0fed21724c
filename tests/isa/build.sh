#!/usr/bin/env bash
# Build the ISA self-check tests:  tests/isa/build.sh [OUTDIR]  (default tests/isa/bin)
# Every tests/isa/*.S is built for RV32 (rv32imac_zicsr_zifencei/ilp32) and
# RV64 (rv64imac_zicsr_zifencei/lp64) as OUTDIR/<name>-rv32.elf and -rv64.elf,
# with no C library: test.h holds the start-up code, link.ld the layout.
# Reproducible like programs/build.sh: relative paths, no build id, no dates.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
CC="${CC:-riscv64-unknown-elf-gcc}"
cd "$here"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0

common=(-nostdlib -nostartfiles -static -T link.ld -I. "-ffile-prefix-map=$here=."
        -Wl,--build-id=none -Wl,--no-warn-rwx-segments)
n=0
for src in *.S; do
  name="${src%.S}"
  "$CC" -march=rv32imac_zicsr_zifencei -mabi=ilp32 "${common[@]}" -o "$out/$name-rv32.elf" "$src"
  "$CC" -march=rv64imac_zicsr_zifencei -mabi=lp64 -mcmodel=medany "${common[@]}" -o "$out/$name-rv64.elf" "$src"
  n=$((n + 2))
done
echo "built $n ISA tests into $out"
