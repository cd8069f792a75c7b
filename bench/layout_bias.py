#!/usr/bin/env python3
"""What randomising layout buys and costs, measured in one session (docs/method.md).

Runs, with the release build, for each --layout (fixed, then random, alternating):
  1. the inert knob, REPEAT times: `alloclab compare --size SIZE --variants
     in-place,out-of-place --allocators "system;system:arena_max=8;mimalloc"
     --processes PROCESSES --no-adaptive`. glibc's arena_max cannot matter to a
     one-thread run, so any "faster"/"slower" of system:arena_max=8 against system's
     defaults is a false verdict; also read: the median half-width of the cells' p50
     intervals (the table's ±p50);
  2. a genuine few-% effect, REPEAT times: `alloclab compare --size SIZE --variants
     in-place --allocators "system;mimalloc"` with its defaults (adaptive rounds within
     18 s): the ratio, whether it was decided, and after how many seconds every
     comparison was.

Prints one summary per layout; nothing is asserted (speed belongs here, not in tests).
Usage: python3 bench/layout_bias.py [--size 1000000] [--repeat 3] [--processes 20]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ALLOCLAB = "target/release/alloclab"
# "in-place vs system's defaults: no significant difference (1.03x [1.00x, 1.10x])" or
# "out-of-place vs system's defaults: 1.06x slower [1.03x, 1.09x]"
KNOB = re.compile(
    r"(?P<variant>in-place|out-of-place) vs system's defaults: "
    r"(?:(?P<none>no significant difference|undecided) \((?P<r0>[\d.]+)x|"
    r"(?P<r>[\d.]+)x (?P<dir>faster|slower) \[)"
)
# A table row: "system   in-place   20   620 µs  ±11.2%"
ROW = re.compile(r"^(?P<alloc>\S+)\s+(?P<variant>in-place|out-of-place)\s+\d+\s+\S+ \S+\s+±(?P<hw>[\d.]+)%")
DECIDED = re.compile(
    r"(?P<k>\d+) of (?P<n>\d+) printed comparisons decided(?: and within ±[\d.]+ %)? "
    r"after (?P<s>\d+) s"
)
FASTEST = re.compile(r"^fastest in-place: (?P<line>.*)$", re.M)


def compare(args):
    env = dict(os.environ, COLUMNS="400")
    start = time.monotonic()
    out = subprocess.run(
        [ALLOCLAB, "compare", *args], capture_output=True, text=True, check=False, env=env
    )
    seconds = time.monotonic() - start
    if out.returncode not in (0, 1):
        sys.exit(f"alloclab compare {' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return out.stdout, seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1000000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--processes", type=int, default=20)
    a = p.parse_args()
    if not os.path.exists(ALLOCLAB):
        sys.exit(f"{ALLOCLAB} is missing: run `cargo build --release` (or `make build`) first")
    results = {"fixed": [], "random": []}
    for i in range(a.repeat):
        for layout in ("fixed", "random"):
            text, secs = compare([
                "--size", a.size, "--variants", "in-place,out-of-place",
                "--allocators", "system;system:arena_max=8;mimalloc",
                "--processes", str(a.processes), "--no-adaptive", "--layout", layout,
            ])
            knob = []
            for m in KNOB.finditer(text):
                if m["dir"]:
                    knob.append((m["variant"], float(m["r"]), m["dir"]))
                else:
                    knob.append((m["variant"], float(m["r0"]), "none"))
            widths = [float(m["hw"]) for line in text.splitlines() if (m := ROW.match(line))]
            text2, secs2 = compare([
                "--size", a.size, "--variants", "in-place", "--allocators", "system;mimalloc",
                "--layout", layout,
            ])
            d = DECIDED.search(text2)
            fastest = FASTEST.search(text2)
            results[layout].append({
                "knob": knob,
                "widths": widths,
                "secs": secs,
                "effect": fastest["line"] if fastest else "no fastest line",
                "decided_after": float(d["s"]) if d and d["k"] == d["n"] else None,
                "decided": d.group(0) if d else "no decision line",
            })
            r = results[layout][-1]
            print(f"[{i + 1}/{a.repeat}] layout {layout}: knob {r['knob']}; median ±p50 "
                  f"{statistics.median(widths) if widths else float('nan'):.1f} %; "
                  f"system vs mimalloc in-place {r['effect']} ({r['decided']})", flush=True)
    print()
    for layout, runs in results.items():
        verdicts = [k for r in runs for k in r["knob"]]
        false = [k for k in verdicts if k[2] in ("faster", "slower")]
        widths = [w for r in runs for w in r["widths"]]
        decided = [r["decided_after"] for r in runs if r["decided_after"] is not None]
        effects = [r["effect"] for r in runs]
        print(f"layout {layout}:")
        print(f"  inert knob (system:arena_max=8 vs system, {len(verdicts)} comparisons): "
              f"{len(false)} false verdicts; ratios "
              + ", ".join(f"{v} {r:.3f}x {d}" for v, r, d in verdicts))
        if widths:
            print(f"  p50 interval half-width, median over cells and runs: {statistics.median(widths):.1f} % "
                  f"(range {min(widths):.1f}–{max(widths):.1f} %)")
        print(f"  genuine effect (system vs mimalloc in-place): "
              + " | ".join(effects)
              + f"; every comparison decided in {len(decided)} of {len(runs)} runs"
              + (f", after {statistics.median(decided):.0f} s (median)" if decided else ""))


if __name__ == "__main__":
    main()
