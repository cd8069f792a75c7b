#!/usr/bin/env python3
"""The measured kernels of two builds against each other, as ratios in one session.

    python3 bench/kernels_ab.py --old /tmp/before --new target/release

Copies of the worker binaries (alloclab-system, alloclab-mimalloc, …) of one build are in
--old, of the other in --new (e.g. `cp target/release/alloclab-* /tmp/before/` before a
change to the release profile, then `make build`). Each cell (allocator × variant at
--size elements) runs under both builds in alternating order, --rounds times; each run's
p50 is the worker's own, and the line gives the median of new/old and its range. A build
setting that leaves the kernels alone gives medians within the rounds' noise of 1.
"""
import argparse
import json
import statistics
import subprocess


def p50(folder, allocator, variant, size):
    out = subprocess.run(
        [f"{folder}/alloclab-{allocator}", "--workload=scale", f"--variant={variant}",
         f"--size={size}", "--min-time=0.1", "--warmup-time=0.02"],
        capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["p50_ns"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--allocators", default="system,mimalloc")
    ap.add_argument("--variants", default="in-place,out-of-place,reuse,fused")
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    for allocator in a.allocators.split(","):
        for variant in a.variants.split(","):
            ratios = []
            for r in range(a.rounds):
                first, second = (a.old, a.new) if r % 2 == 0 else (a.new, a.old)
                got = {first: p50(first, allocator, variant, a.size)}
                got[second] = p50(second, allocator, variant, a.size)
                ratios.append(got[a.new] / got[a.old])
            ratios.sort()
            print(f"{allocator:9} {variant:13} new/old p50: median {statistics.median(ratios):.3f}, "
                  f"range {ratios[0]:.3f}–{ratios[-1]:.3f} ({a.rounds} rounds)", flush=True)


if __name__ == "__main__":
    main()
