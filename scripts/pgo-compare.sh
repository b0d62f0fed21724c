#!/usr/bin/env bash
# Does a profile from `retrace lbr` pay off, and how does it compare with
# clang's own instrumented PGO? For SQLite (the amalgamation from the
# libsqlite3-sys crate's source, driven by programs/native/sqlbench.c) and
# two bundled example programs, built natively with clang-14:
#
#   plain    clang-14 -O2
#   retrace  clang-14 -O2 -fprofile-sample-use=P, P from a writer
#            (`retrace lbr cc`) recorded --exact on the training input,
#            `lbr convert --format perfscript`, llvm-profgen-14
#   instr    clang-14 -O2 -fprofile-instr-use=D, D from a
#            -fprofile-instr-generate build run on the same training input
#
# each measured on a *different* evaluation input: wall time over ROUNDS
# interleaved rounds (median, min–max), and instructions and branch
# mispredictions from `valgrind --tool=cachegrind --branch-sim=yes`
# (whole process; no hardware counters needed). Prints a Markdown table.
#
# Usage: scripts/pgo-compare.sh [ROUNDS [PROGRAM…]]   (default: 7 rounds;
#        sqlite, sort and exprparse)
# Needs: clang-14, llvm-14 (llvm-profgen-14, llvm-profdata-14),
# libclang-rt-14-dev, binutils, valgrind; cargo (builds retrace and fetches
# libsqlite3-sys). RETRACE=path uses another retrace binary.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-7}"
only=("${@:2}")
retrace="${RETRACE:-$root/target/release/retrace}"
if [ -z "${RETRACE:-}" ]; then
  (cd "$root" && cargo build --release -q)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The amalgamation cargo downloaded for the workspace (a dev-dependency).
# This host's packages only: other platforms' are never downloaded.
host="$(rustc -vV | sed -n 's/^host: //p')"
manifest="$(cd "$root" && cargo metadata --format-version 1 --filter-platform "$host" |
  grep -o '"manifest_path":"[^"]*libsqlite3-sys-[^"]*"' | head -n 1 |
  sed 's/^"manifest_path":"//; s/"$//')"
sqlite="$(dirname "$manifest")/sqlite3"
[ -f "$sqlite/sqlite3.c" ] || { echo "pgo-compare: no sqlite3.c under $sqlite" >&2; exit 1; }

# Every build's options; DWARF 4 because Debian 12's valgrind cannot read
# clang-14's default DWARF 5.
flags=(-O2 -g -gdwarf-4)

# name | sources and their options | training input | evaluation input
programs=(
  "sqlite|-DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -I$sqlite $root/programs/native/sqlbench.c $sqlite/sqlite3.c|1000 3|3000 17"
  "sort|-I$root/programs/src $root/programs/src/sort.c|50000 4 1|200000 12 7"
  "exprparse|-I$root/programs/src $root/programs/src/exprparse.c|5000 6 9|40000 6 4"
)

# clang-14 with the common flags; anything it says about a profile fails.
build() { # out sources extra…
  local out="$1" src="$2"
  shift 2
  # shellcheck disable=SC2086 # the sources are words
  clang-14 "${flags[@]}" "$@" $src -o "$out" 2>"$out.diag"
  if [ -s "$out.diag" ]; then
    echo "pgo-compare: clang-14 said, building $out:" >&2
    cat "$out.diag" >&2
    exit 1
  fi
}

now() { echo "${EPOCHREALTIME/[.,]/}"; } # microseconds

# median, min and max of the numbers on stdin (microseconds) in seconds.
stats() {
  sort -n | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f %.3f %.3f\n", m / 1e6, v[1] / 1e6, v[NR] / 1e6 }'
}

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (b - a) / a }'; }

echo "| program (training → evaluation input) | build | wall s, median (min–max) of $rounds | vs plain | instructions | vs plain | mispredicts | vs plain |"
echo "|---|---|---|---|---|---|---|---|"
for entry in "${programs[@]}"; do
  IFS='|' read -r name src train eval <<<"$entry"
  if [ "${#only[@]}" -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then continue; fi
  d="$work/$name"
  mkdir -p "$d"
  read -r -a train_args <<<"$train"
  read -r -a eval_args <<<"$eval"

  # retrace's profile: writer, exact recording, branch stacks, llvm-profgen.
  # shellcheck disable=SC2086
  "$retrace" lbr cc -- clang-14 "${flags[@]}" $src -o "$d/writer" >/dev/null
  "$retrace" lbr record --writer "$d/writer" -o "$d/train.lbr" --exact \
    -- "${train_args[@]}" >/dev/null 2>"$d/record.txt" || true
  grep -q "recorded" "$d/record.txt" || { cat "$d/record.txt" >&2; exit 1; }
  "$retrace" lbr convert "$d/train.lbr" --format perfscript -o "$d/train.perfscript"
  llvm-profgen-14 --binary="$d/writer" --perfscript="$d/train.perfscript" \
    --output="$d/retrace.prof" --format=text 2>"$d/profgen.txt"
  if grep -v "more samples" "$d/profgen.txt" | grep -qi warning; then
    echo "pgo-compare: llvm-profgen-14 warned on $name:" >&2
    cat "$d/profgen.txt" >&2
    exit 1
  fi

  # clang's instrumented PGO on the same training input.
  build "$d/instr-gen" "$src" -fprofile-instr-generate
  LLVM_PROFILE_FILE="$d/train.profraw" "$d/instr-gen" "${train_args[@]}" >/dev/null || true
  llvm-profdata-14 merge -o "$d/train.profdata" "$d/train.profraw"

  build "$d/plain" "$src"
  build "$d/retrace" "$src" "-fprofile-sample-use=$d/retrace.prof"
  build "$d/instr" "$src" "-fprofile-instr-use=$d/train.profdata"

  # Same results from every build (the examples exit with their checksum).
  for b in plain retrace instr; do
    code=0
    "$d/$b" "${eval_args[@]}" >"$d/$b.out" || code=$?
    echo "exit $code" >>"$d/$b.out"
    cmp -s "$d/plain.out" "$d/$b.out" || { echo "pgo-compare: $name $b prints other results" >&2; exit 1; }
  done

  # Wall time, interleaved: every round runs each build once, so a change
  # in the machine's load touches all three alike.
  for ((r = 0; r < rounds; r++)); do
    for b in plain retrace instr; do
      t0="$(now)"
      "$d/$b" "${eval_args[@]}" >/dev/null || true
      echo $(($(now) - t0)) >>"$d/$b.wall"
    done
  done

  for b in plain retrace instr; do
    valgrind --tool=cachegrind --branch-sim=yes --cache-sim=no \
      --cachegrind-out-file=/dev/null "$d/$b" "${eval_args[@]}" >/dev/null 2>"$d/$b.cg" || true
    # "==pid== I   refs:  626,398,996" and "==pid== Mispredicts:  7,669,478 ( …"
    ir="$(awk '/I +refs:/ { gsub(",", "", $NF); print $NF }' "$d/$b.cg")"
    mp="$(awk '/Mispredicts:/ { gsub(",", "", $3); print $3 }' "$d/$b.cg")"
    read -r med lo hi < <(stats <"$d/$b.wall")
    echo "$med $lo $hi $ir $mp" >"$d/$b.sum"
  done
  read -r pmed _ _ pir pmp <"$d/plain.sum"
  label="$name ($train → $eval)"
  for b in plain retrace instr; do
    read -r med lo hi ir mp <"$d/$b.sum"
    vs=(— — —)
    [ "$b" = plain ] || vs=("$(pct "$pmed" "$med")" "$(pct "$pir" "$ir")" "$(pct "$pmp" "$mp")")
    printf "| %s | %s | %s (%s–%s) | %s | %s M | %s | %s M | %s |\n" "$label" "$b" \
      "$med" "$lo" "$hi" "${vs[0]}" \
      "$(awk -v x="$ir" 'BEGIN { printf "%.1f", x / 1e6 }')" "${vs[1]}" \
      "$(awk -v x="$mp" 'BEGIN { printf "%.3f", x / 1e6 }')" "${vs[2]}"
    label=""
  done
done
