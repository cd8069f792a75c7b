#!/usr/bin/env python3
"""How often `alloclab diff` calls a change where there is none, and which changes it sees.

    python3 bench/diff_power.py [--runs 5] [--size 1000000] [--alloclab target/release/alloclab]
                                [--keep DIR | --load DIR] [--neighbour]

Runs `alloclab compare --size SIZE --format json` RUNS times, one after the other (real
process-to-process and run-to-run noise, nothing simulated; 5 runs make 10 pairs), then,
for diff as it is and with its readings taken away one by one (--no-fault-reference,
--no-host-reference, --no-drift-allowance: each run's own intervals only):

* A/A: diffs every pair of those runs. Every "slower" or "faster" there is a false
  positive; the rate is over all cells of all pairs.
* Known effects: diffs run i against run j with every p50 of run j (its medians, interval
  ends and each process's p50) multiplied by 1 + d, for d = 2, 5, 10, 20, 50 %, in the
  cells whose loop calls the allocator (allocs_per_iter above 0: what an allocator's
  change can slow; the reuse cells, which call none, are the host's reference and keep
  their times): real noise from two separate runs plus an effect of known size. The share
  of those cells called "slower" is diff's power for that effect at default settings.
  Twice: with every allocator's allocating cells slowed (a change under all of them), and
  with one allocator's slowed at a time, each in turn (an upgrade of one allocator) —
  where the other allocators' cells called slower or faster are false calls too, counted
  apart (a reference that read one allocator's change into the others' would show there).

Prints one table per way; the README and docs/diff.md quote them. --keep DIR saves the
compare runs (run1.json …) and --load DIR diffs saved ones again. --neighbour runs the
compares beside the standard noisy neighbour of bench/compare_precision.py (stress-ng,
one CPU and one memory-bandwidth stressor pinned to one core). Needs only Python 3.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

EFFECTS = [0.02, 0.05, 0.10, 0.20, 0.50]


def compare(alloclab, size):
    out = subprocess.run([alloclab, "compare", "--size", str(size), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def allocates(r):
    """Whether the cell's loop calls the allocator: what an allocator's change can slow."""
    return r.get("allocs_per_iter") != 0


def one_allocator(spec):
    """The cells an upgrade of one allocator can slow: its own that call it."""
    return lambda r: allocates(r) and r.get("allocator_spec", r.get("allocator")) == spec


def scaled(rows, factor, pick=allocates):
    rows = json.loads(json.dumps(rows))
    for r in filter(pick, rows):
        for k in ["p50_ns", "p50_ci_low_ns", "p50_ci_high_ns"]:
            if r.get(k) is not None:
                r[k] = r[k] * factor
        if r.get("process_p50_ns"):
            r["process_p50_ns"] = [v * factor for v in r["process_p50_ns"]]
    return rows


def verdicts(alloclab, base, new, tmp, extra, pick=allocates):
    paths = []
    for name, rows in (("base", base), ("new", new)):
        p = os.path.join(tmp, name + ".json")
        with open(p, "w") as f:
            json.dump(rows, f)
        paths.append(p)
    out = subprocess.run([alloclab, "diff", "--format", "json"] + extra + paths,
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit("diff failed: " + out.stderr)
    cells = json.loads(out.stdout)["diff"]["cells"]
    affected = {f"{r['workload']} {r['allocator_spec'] if 'allocator_spec' in r else r['allocator']} "
                f"{r['variant']} size={r['size']}" for r in new if pick(r)}
    return [(c["verdict"], c["cell"] in affected) for c in cells]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=int, default=1000000)
    ap.add_argument("--alloclab", default="target/release/alloclab")
    ap.add_argument("--keep", help="save the compare runs into this folder")
    ap.add_argument("--load", help="diff the compare runs saved in this folder")
    ap.add_argument("--neighbour", action="store_true",
                    help="run the compares beside stress-ng --taskset 1 --cpu 1 --stream 1")
    a = ap.parse_args()
    if a.load:
        names = sorted((f for f in os.listdir(a.load) if f.endswith(".json")),
                       key=lambda f: int("".join(c for c in f if c.isdigit()) or 0))
        runs = [json.load(open(os.path.join(a.load, f))) for f in names]
    else:
        runs = []
        neighbour = None
        if a.neighbour:
            neighbour = subprocess.Popen(
                ["stress-ng", "--taskset", "1", "--cpu", "1", "--stream", "1", "--quiet"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(2)
        try:
            for k in range(a.runs):
                runs.append(compare(a.alloclab, a.size))
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    with open(os.path.join(a.keep, f"run{k + 1}.json"), "w") as f:
                        json.dump(runs[-1], f)
        finally:
            if neighbour:
                neighbour.terminate()
                neighbour.wait()
    pairs = list(itertools.combinations(range(len(runs)), 2))
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in (("diff (the host's shift, each faulting cell against the other allocators'"
                              " cost of a fault, and the between-run allowance)", []),
                             ("diff --no-fault-reference (the host's shift and the allowance)",
                              ["--no-fault-reference"]),
                             ("diff --no-host-reference (neither reference: the between-run allowance only)",
                              ["--no-host-reference"]),
                             ("diff --no-host-reference --no-drift-allowance (within-run intervals only)",
                              ["--no-host-reference", "--no-drift-allowance"])):
            print(f"== {label}")
            aa = [v for i, j in pairs
                  for v, _ in verdicts(a.alloclab, runs[i], runs[j], tmp, extra)]
            wrong = sum(v in ("slower", "faster") for v in aa)
            undecided = sum(v == "undecided" for v in aa)
            print(f"A/A: {len(pairs)} pairs of compare runs, {len(aa)} cells: "
                  f"{wrong} called slower or faster ({100.0 * wrong / len(aa):.1f} %), "
                  f"{undecided} undecided")
            print("known effect            cells called slower: every allocator's allocating cells"
                  " | one allocator's at a time | the other allocators' cells called changed then")
            specs = sorted({r.get("allocator_spec", r.get("allocator")) for r in runs[0]})
            for d in EFFECTS:
                v = [x for i, j in pairs
                     for x, hit in verdicts(a.alloclab, runs[i], scaled(runs[j], 1 + d), tmp, extra)
                     if hit]
                both = [(x, hit) for i, j in pairs for s in specs
                        for x, hit in verdicts(a.alloclab, runs[i],
                                               scaled(runs[j], 1 + d, one_allocator(s)), tmp, extra,
                                               one_allocator(s))]
                one = [x for x, hit in both if hit]
                rest = [x for x, hit in both if not hit]
                slower, slower_one = sum(x == "slower" for x in v), sum(x == "slower" for x in one)
                wrong = sum(x in ("slower", "faster") for x in rest)
                print(f"  +{100 * d:>4.0f} %      {slower:>4} of {len(v)} ({100.0 * slower / len(v):.0f} %)"
                      f" | {slower_one:>4} of {len(one)} ({100.0 * slower_one / len(one):.0f} %)"
                      f" | {wrong:>4} of {len(rest)} ({100.0 * wrong / len(rest):.1f} %)")

if __name__ == "__main__":
    main()
