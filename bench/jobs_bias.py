#!/usr/bin/env python3
"""What `compare --jobs N` does to the figures, measured in one session.

Runs `alloclab compare --size SIZE --format json` with --jobs 1 and with --jobs N,
alternating (1, N, 1, N, ...), REPEAT times each, with the release build, and prints:
  * processes per cell and seconds per compare for each;
  * the shift in absolute times: per cell, the median p50 with --jobs N over the median
    with --jobs 1; their median and range over the cells;
  * the bias in ratios: per "vs in-place" comparison, the median ratio with each; how
    many of them differ by more than 5 %, and how many of --jobs N's intervals miss the
    --jobs 1 median ratio;
  * the median half-width of the "vs in-place" intervals with each.

Nothing is asserted (speed belongs here, not in tests).
Usage: python3 bench/jobs_bias.py [--size 1000000] [--repeat 3] [--jobs 2]
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

ALLOCLAB = "target/release/alloclab"


def compare(size, jobs):
    start = time.monotonic()
    out = subprocess.run(
        [ALLOCLAB, "compare", "--size", size, "--jobs", str(jobs), "--format", "json"],
        capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    if out.returncode not in (0, 1):
        sys.exit(f"compare --jobs {jobs} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout), seconds


def cell(r):
    return f"{r['allocator']} {r['variant']}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="1000000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    runs = {1: [], a.jobs: []}
    for _ in range(a.repeat):
        for j in (1, a.jobs):
            rows, seconds = compare(a.size, j)
            runs[j].append((rows, seconds))
    for j, rs in runs.items():
        procs = [r["processes"] for rows, _ in rs for r in rows if r.get("processes")]
        halves = [
            (r["vs_in_place_ci_high"] - r["vs_in_place_ci_low"]) / 2 / r["vs_in_place"] * 100
            for rows, _ in rs for r in rows
            if r.get("vs_in_place") and r.get("vs_in_place_ci_low") is not None
        ]
        print(f"--jobs {j}: {statistics.median(procs):.0f} processes per cell (median), "
              f"{statistics.median(s for _, s in rs):.1f} s per compare, "
              f"median vs-in-place interval ±{statistics.median(halves):.1f} %")

    def medians(j, key):
        by = {}
        for rows, _ in runs[j]:
            for r in rows:
                if r.get(key):
                    by.setdefault(cell(r), []).append(r[key])
        return {c: statistics.median(v) for c, v in by.items()}

    p1, pn = medians(1, "p50_ns"), medians(a.jobs, "p50_ns")
    shifts = sorted((pn[c] / p1[c], c) for c in p1 if c in pn)
    print(f"absolute p50, --jobs {a.jobs} over --jobs 1, per cell: median "
          f"{statistics.median(s for s, _ in shifts):.3f}, from {shifts[0][0]:.3f} "
          f"({shifts[0][1]}) to {shifts[-1][0]:.3f} ({shifts[-1][1]})")
    r1, rn = medians(1, "vs_in_place"), medians(a.jobs, "vs_in_place")
    both = sorted(c for c in r1 if c in rn)
    apart = [c for c in both if abs(rn[c] / r1[c] - 1) > 0.05]
    missed = 0
    total = 0
    for rows, _ in runs[a.jobs]:
        for r in rows:
            c = cell(r)
            if c in r1 and r.get("vs_in_place_ci_low") is not None:
                total += 1
                if not r["vs_in_place_ci_low"] <= r1[c] <= r["vs_in_place_ci_high"]:
                    missed += 1
    print(f"vs-in-place ratios: {len(apart)} of {len(both)} medians differ by more than 5 %; "
          f"{missed} of {total} --jobs {a.jobs} intervals miss the --jobs 1 median")
    for c in both:
        mark = "  <-- more than 5 %" if c in apart else ""
        print(f"  {c}: {r1[c]:.3f} with --jobs 1, {rn[c]:.3f} with --jobs {a.jobs}{mark}")


if __name__ == "__main__":
    main()
