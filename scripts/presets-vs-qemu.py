#!/usr/bin/env python3
"""Time, as whole processes in interleaved rounds, what a user of retrace
runs against what a user of QEMU runs: QEMU running the program once,
retrace's plain run, its recording, the estimates of every preset core that
fits the program from that one recording (at `control` and at `fast`), and
the cycle-level run on rocket. Prints medians of wall and CPU time and the
median of the per-round ratios against QEMU's wall time.

Usage: scripts/presets-vs-qemu.py [--retrace PATH] [--rounds N] PROGRAM.elf

Each round starts one step later than the one before, so that no step
always follows the same one. docs/PERFORMANCE.md quotes its figures.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RV64_PRESETS = ["ideal", "inorder5", "rocket", "u74"]
RV32_PRESETS = ["ideal", "picorv32", "inorder5", "rocket", "ibex-small",
                "ibex-maxperf", "cv32e40p", "e31"]


def is_rv64(path):
    with open(path, "rb") as f:
        header = f.read(5)
    if header[:4] != b"\x7fELF":
        sys.exit(f"presets-vs-qemu: {path} is not an ELF file")
    return header[4] == 2


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program")
    ap.add_argument("--retrace", default="target/release/retrace")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    r, p = args.retrace, args.program
    rv64 = is_rv64(p)
    cores = [a for c in (RV64_PRESETS if rv64 else RV32_PRESETS) for a in ("--core", c)]
    qemu = "qemu-system-riscv64" if rv64 else "qemu-system-riscv32"
    work = tempfile.mkdtemp(prefix="presets-vs-qemu.")
    trace = os.path.join(work, "once.rtrace")
    if subprocess.run([r, "record", p, "-o", trace], stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit(f"presets-vs-qemu: recording {p} failed")
    steps = {
        "qemu": [qemu, "-M", "virt", "-bios", "none", "-nographic",
                 "-semihosting-config", "enable=on,target=native", "-kernel", p],
        "retrace run": [r, "run", p],
        "retrace record": [r, "record", p, "-o", os.path.join(work, "again.rtrace")],
        "every preset, control": [r, "estimate", p, trace, *cores, "--fidelity", "control"],
        "every preset, fast": [r, "estimate", p, trace, *cores, "--fidelity", "fast"],
        "cycle-level rocket": [r, "run", "--core", "rocket", p],
    }
    names = list(steps)
    times = {k: [] for k in names}
    for n in range(args.rounds):
        for k in names[n % len(names):] + names[:n % len(names)]:
            times[k].append(timed(steps[k]))
    print(f"{p}: {args.rounds} interleaved rounds; presets: {' '.join(cores[1::2])}")
    qemu_wall = [t[0] for t in times["qemu"]]
    for k in names:
        wall = statistics.median(t[0] for t in times[k])
        cpu = statistics.median(t[1] for t in times[k])
        ratio = statistics.median(t[0] / q for t, q in zip(times[k], qemu_wall))
        codes = sorted({t[2] for t in times[k]})
        print(f"  {k:24s} wall {wall * 1e3:8.1f} ms  CPU {cpu * 1e3:8.1f} ms"
              f"  ÷ QEMU wall {ratio:5.2f}  exit {codes}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
