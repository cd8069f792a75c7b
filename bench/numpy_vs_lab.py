#!/usr/bin/env python3
"""NumPy's func1/func2 against alloclab's scale in-place/out-of-place, in one run, as ratios.

    python3 bench/numpy_vs_lab.py [--size 1000000] [--min-time 1.0] [--alloclab target/release/alloclab]

Needs NumPy (a benchmark reference, not a dependency of the lab). Runs the NumPy timing
and the lab's glibc runs back to back, twice, alternating, and reports medians of the
per-call p50s, so that both sides see the same machine state.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def numpy_run(size, min_time):
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "experiments", "numpy_temporaries.py"),
         "--size", str(size), "--min-time", str(min_time), "--json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def lab_run(alloclab, size, min_time):
    out = subprocess.run(
        [alloclab, "compare", "--size", str(size), "--min-time", str(min_time),
         "--allocators", "system", "--variants", "in-place,out-of-place", "--format", "json"],
        check=True, capture_output=True, text=True).stdout
    return {r["variant"]: r for r in json.loads(out)}


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--alloclab", default=os.path.join(ROOT, "target", "release", "alloclab"))
    args = ap.parse_args()
    if not os.path.exists(args.alloclab):
        sys.exit(f"error: {args.alloclab} not found; run `make build` first")
    np_f1, np_f2, lab_in, lab_out = [], [], [], []
    version = None
    for _ in range(args.rounds):
        n = numpy_run(args.size, args.min_time)
        version = n["numpy"]
        np_f1.append(n["func1"]["p50_ns"])
        np_f2.append(n["func2"]["p50_ns"])
        lab = lab_run(args.alloclab, args.size, args.min_time)
        lab_in.append(lab["in-place"]["p50_ns"])
        lab_out.append(lab["out-of-place"]["p50_ns"])
    f1, f2, li, lo = map(median, (np_f1, np_f2, lab_in, lab_out))
    print(f"size {args.size}, NumPy {version}, medians of {args.rounds} alternating rounds (p50 per call)")
    print(f"  NumPy func1 (in-place)     {f1 / 1e3:9.1f} µs")
    print(f"  alloclab system in-place   {li / 1e3:9.1f} µs   lab / NumPy = {li / f1:.3f}")
    print(f"  NumPy func2 (out-of-place) {f2 / 1e3:9.1f} µs   func2 / func1 = {f2 / f1:.2f}x")
    print(f"  alloclab system out-of-place {lo / 1e3:7.1f} µs   out / in = {lo / li:.2f}x")


if __name__ == "__main__":
    main()
