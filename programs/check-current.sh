#!/usr/bin/env bash
# Check that the committed ELF files are what the sources build to:
# rebuilds programs/ and tests/isa/ into a temporary directory and fails,
# naming every file that differs, is missing, or is left over, when the
# result is not byte-identical to programs/bin/ and tests/isa/bin/.
# CI runs this; after changing a program or an ISA test, run
# programs/build.sh and tests/isa/build.sh and commit the ELFs.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$here/build.sh" "$tmp/programs" >/dev/null
"$root/tests/isa/build.sh" "$tmp/isa" >/dev/null

bad=0
compare() { # built-dir committed-dir label
  local built="$1" committed="$2" label="$3" f
  for f in "$built"/*.elf; do
    f="$(basename "$f")"
    if [ ! -e "$committed/$f" ]; then
      echo "missing from $label: $f (not committed)"
      bad=1
    elif ! cmp -s "$built/$f" "$committed/$f"; then
      echo "differs: $label/$f"
      bad=1
    fi
  done
  for f in "$committed"/*.elf; do
    [ -e "$f" ] || continue
    f="$(basename "$f")"
    if [ ! -e "$built/$f" ]; then
      echo "stale: $label/$f (no source builds it)"
      bad=1
    fi
  done
}
compare "$tmp/programs" "$here/bin" programs/bin
compare "$tmp/programs/mp" "$here/bin/mp" programs/bin/mp
compare "$tmp/programs/fp" "$here/bin/fp" programs/bin/fp
compare "$tmp/isa" "$root/tests/isa/bin" tests/isa/bin

if [ "$bad" -ne 0 ]; then
  echo "the committed ELFs are not current: run programs/build.sh and tests/isa/build.sh, then commit" >&2
  exit 1
fi
echo "programs/bin and tests/isa/bin are current ($(ls "$tmp/programs"/*.elf "$tmp/programs"/mp/*.elf "$tmp/programs"/fp/*.elf | wc -l) programs, $(ls "$tmp/isa" | wc -l) ISA tests)"
