#!/usr/bin/env python3
"""The founding case: NumPy's func1 (one temporary, divided in place) and func2 (a second
buffer for the quotient), timed by themselves.

    python3 experiments/numpy_temporaries.py [--size 1000000] [--min-time 1.0] [--json]
    python3 experiments/numpy_temporaries.py --calls 200 --only func2   # fixed work

With --calls the script does a fixed amount of work (that many calls of each function
after 10 warm-up calls) instead of running for a fixed time, so that the whole process's
time, faults and syscalls compare across allocators:

    alloclab exec -- python3 experiments/numpy_temporaries.py --calls 200 --only func2

Each call is timed on its own (perf_counter_ns around one call), like alloclab's
per-iteration latency, after a warm-up; the two functions alternate in blocks so that
drift on a noisy machine hits both alike. Prints median and p99 per call.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def func1(a):
    # NumPy elides the temporary: the division runs in place in astype's buffer.
    return a.astype(np.float64) / 255.0


def func2(a):
    t = a.astype(np.float64)
    return t / 255.0


def time_calls(fn, a, min_time_s, min_calls=10, max_calls=None):
    samples = []
    start = time.perf_counter_ns()
    while len(samples) < min_calls or (
        max_calls is None and time.perf_counter_ns() - start < min_time_s * 1e9
    ):
        if max_calls is not None and len(samples) >= max_calls:
            break
        t0 = time.perf_counter_ns()
        fn(a)
        samples.append(time.perf_counter_ns() - t0)
    return samples


def summary(samples):
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"calls": len(s), "min_ns": s[0], "p50_ns": pick(0.5), "p99_ns": pick(0.99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--calls", type=int, help="fixed work: exactly this many calls of each function")
    ap.add_argument("--only", choices=("func1", "func2", "both"), default="both")
    args = ap.parse_args()
    if args.size < 1:
        sys.exit("error: --size must be at least 1 element")
    if args.calls is not None and args.calls < 4:
        sys.exit("error: --calls must be at least 4 (the calls are split into 4 blocks)")
    a = np.random.default_rng(args.seed).integers(0, 256, args.size, dtype=np.uint8)
    assert np.array_equal(func1(a), func2(a))
    funcs = [(f, n) for f, n in ((func1, "func1"), (func2, "func2")) if args.only in (n, "both")]
    results = {name: [] for _, name in funcs}
    for fn, name in funcs:
        if args.calls is None:
            time_calls(fn, a, 0.1)  # warm-up
        else:
            time_calls(fn, a, 0, min_calls=10, max_calls=10)
    blocks = 4
    for b in range(blocks):
        for fn, name in funcs:
            if args.calls is None:
                results[name] += time_calls(fn, a, args.min_time / blocks)
            else:
                n = args.calls // blocks + (1 if b < args.calls % blocks else 0)
                results[name] += time_calls(fn, a, 0, min_calls=n, max_calls=n)
    preload = os.environ.get("LD_PRELOAD")
    out = {
        "numpy": np.__version__,
        "size": args.size,
        "malloc": os.path.basename(preload) if preload else "glibc",
    }
    for _, name in funcs:
        out[name] = summary(results[name])
    if len(funcs) == 2:
        out["func2_overfunc1_p50"] = out["func2"]["p50_ns"] / out["func1"]["p50_ns"]
    if args.json:
        print(json.dumps(out))
    else:
        print(f"NumPy {out['numpy']}, size {args.size}, malloc: {out['malloc']}")
        for _, name in funcs:
            r = out[name]
            print(f"  {name}: p50 {r['p50_ns'] / 1e3:9.1f} µs  p99 {r['p99_ns'] / 1e3:9.1f} µs  ({r['calls']} calls)")
        if len(funcs) == 2:
            print(f"  func2 / func1 (p50): {out['func2_overfunc1_p50']:.2f}x")


if __name__ == "__main__":
    main()
