#!/usr/bin/env python3
"""How often `alloclab diff` calls a change where there is none, and which changes it sees.

    python3 bench/diff_power.py [--runs 4] [--size 1000000] [--alloclab target/release/alloclab]

Runs `alloclab compare --size SIZE --format json` RUNS times, one after the other (real
process-to-process noise, nothing simulated), then:

* A/A: diffs every pair of those runs. Every "slower" or "faster" there is a false
  positive; the rate is over all cells of all pairs.
* Known effects: diffs run i against run j with every p50 of run j (its medians, interval
  ends and each process's p50) multiplied by 1 + d, for d = 2, 5, 10, 20, 50 %: real noise
  from two separate runs plus an effect of known size. The share of cells called "slower"
  is diff's power for that effect at default settings (6 processes, ±2 % threshold).

Prints one table; the README quotes it. Needs only Python 3.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

EFFECTS = [0.02, 0.05, 0.10, 0.20, 0.50]


def compare(alloclab, size):
    out = subprocess.run([alloclab, "compare", "--size", str(size), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def scaled(rows, factor):
    rows = json.loads(json.dumps(rows))
    for r in rows:
        for k in ["p50_ns", "p50_ci_low_ns", "p50_ci_high_ns"]:
            if r.get(k) is not None:
                r[k] = r[k] * factor
        if r.get("process_p50_ns"):
            r["process_p50_ns"] = [v * factor for v in r["process_p50_ns"]]
    return rows


def verdicts(alloclab, base, new, tmp):
    paths = []
    for name, rows in (("base", base), ("new", new)):
        p = os.path.join(tmp, name + ".json")
        with open(p, "w") as f:
            json.dump(rows, f)
        paths.append(p)
    out = subprocess.run([alloclab, "diff", "--format", "json"] + paths,
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit("diff failed: " + out.stderr)
    return [c["verdict"] for c in json.loads(out.stdout)["diff"]["cells"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--size", type=int, default=1000000)
    ap.add_argument("--alloclab", default="target/release/alloclab")
    a = ap.parse_args()
    runs = [compare(a.alloclab, a.size) for _ in range(a.runs)]
    pairs = list(itertools.combinations(range(a.runs), 2))
    with tempfile.TemporaryDirectory() as tmp:
        aa = [v for i, j in pairs for v in verdicts(a.alloclab, runs[i], runs[j], tmp)]
        wrong = sum(v in ("slower", "faster") for v in aa)
        undecided = sum(v == "undecided" for v in aa)
        print(f"A/A: {len(pairs)} pairs of compare runs, {len(aa)} cells: "
              f"{wrong} called slower or faster ({100.0 * wrong / len(aa):.1f} %), "
              f"{undecided} undecided")
        print("known effect   cells called slower")
        for d in EFFECTS:
            v = [x for i, j in pairs
                 for x in verdicts(a.alloclab, runs[i], scaled(runs[j], 1 + d), tmp)]
            slower = sum(x == "slower" for x in v)
            print(f"  +{100 * d:>4.0f} %      {slower:>4} of {len(v)} ({100.0 * slower / len(v):.0f} %)")


if __name__ == "__main__":
    main()
