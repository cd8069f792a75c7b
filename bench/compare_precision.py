#!/usr/bin/env python3
"""How fast compare's verdicts become trustworthy, measured in one session.

Runs, with the release build:
  1. `alloclab compare --size SIZE --precision 2` once: the reference ratios, and whether
     every printed comparison reached ±2 % (and in how many seconds);
  2. `alloclab compare --size SIZE` (defaults) REPEAT times for each round order
     (--orders, default blocked and shuffled, alternating): seconds, the median
     half-width of the "vs in-place" ratio intervals, whether every comparison whose
     reference effect is at least 10 % got the reference's direction, and in how many
     runs the order-effect test found carry-over;
  3. an A/A compare REPEAT times: jemalloc against jemalloc with dirty_decay_ms at its
     own default (10000: the same allocator behaviour, reached through MALLOC_CONF),
     in-place and out-of-place: any "faster"/"slower" between the twins is a false
     verdict; and two default compare runs (JSON) diffed with `alloclab diff`: any cell
     called faster or slower is one too.

With --neighbour, steps 2 and 3 run twice: on the quiet machine, then beside a standard,
reproducible noisy neighbour on one core (stress-ng from Debian: one CPU stressor and one
memory-bandwidth stressor, `stress-ng --taskset 1 --cpu 1 --stream 1`), against the same
quiet reference; the summary gives interval widths, verdicts against the reference and
A/A false verdicts per condition.

Prints one summary; nothing is asserted (speed belongs here, not in tests).
Usage: python3 bench/compare_precision.py [--size 1000000] [--repeat 3] [--neighbour]
                                           [--orders blocked,shuffled]
"""
import argparse
import math
import re
import statistics
import subprocess
import sys
import time

ALLOCLAB = "target/release/alloclab"
# The full screen (--verbose) says each comparison on its own line, after the workload:
# "scale, 1,000,000 elements, 1 thread: system out-of-place vs in-place: 30.45x slower
# [21.64x, 32.65x]; why: …", "… reuse vs in-place: no significant difference (0.99x
# [0.87x, 1.12x])", "… 44.59x slower (no verdict: [26.37x, 47.75x] is only a 87.5 %
# interval)".
VS_IN_PLACE = re.compile(
    r"(?P<alloc>\S+) (?P<variant>out-of-place|reuse|fused) vs in-place: (?P<rest>.*)$"
)
DECIDED = re.compile(
    r"^(?P<r>[\d.]+)x (?P<dir>slower|faster) \[(?P<lo>[\d.]+)x, (?P<hi>[\d.]+)x\]"
)
NO_VERDICT = re.compile(
    r"^(?P<r>[\d.]+)x (?:slower|faster) \(no verdict: \[(?P<lo>[\d.]+)x, (?P<hi>[\d.]+)x\]"
)
OPEN = re.compile(
    r"^(?:no significant difference|undecided) \((?P<r>[\d.]+)x \[(?P<lo>[\d.]+)x, (?P<hi>[\d.]+)x\]"
)
# "… jemalloc in-place vs jemalloc:dirty_decay_ms=10000 (the fastest): 1.05x slower [" —
# a verdict between the A/A twins.
VS_FASTEST = re.compile(
    r"(?P<a>\S+) (?P<variant>in-place|out-of-place) vs (?P<b>\S+) \(the fastest\): "
    r"[\d.]+x (?P<dir>slower|faster) \["
)


def run(args):
    start = time.monotonic()
    # --verbose: the full screen, whose "vs in-place" and "fastest" lines this script
    # reads (the default screen leads with the answer in the reader's width); JSON
    # output is left as it is.
    verbose = [] if "json" in args else ["--verbose"]
    out = subprocess.run(
        [ALLOCLAB, "compare", *args, *verbose], capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - start
    if out.returncode not in (0, 1):
        # A refused or failed step is reported as such; the bench goes on without it.
        print(f"REFUSED/FAILED (exit {out.returncode}): alloclab compare {' '.join(args)}: "
              f"{out.stderr.strip()[-600:]}")
        return None, seconds
    return out.stdout, seconds


def vs_in_place(text):
    """{(allocator, variant): (ratio, low, high, verdict)} from the "vs in-place" lines.
    A faster ratio is printed inverted ("1.39x faster" is 1/1.39)."""
    found = {}
    for line in text.splitlines():
        m = VS_IN_PLACE.search(line)
        if not m:
            continue
        rest = m["rest"]
        for rx, verdict in ((NO_VERDICT, "none"), (DECIDED, None), (OPEN, "none")):
            d = rx.match(rest)
            if d:
                found[(m["alloc"], m["variant"])] = (
                    float(d["r"]), float(d["lo"]), float(d["hi"]), verdict or d["dir"])
                break
    return found


def half_width(r, lo, hi):
    return 100 * max(hi - r, r - lo) / r


def rounds_line(text):
    return next((l for l in text.splitlines() if l.startswith("rounds:")), "(no rounds line)")


NEIGHBOUR = ["stress-ng", "--taskset", "1", "--cpu", "1", "--stream", "1", "--quiet"]


def defaults(a, ref, label):
    """REPEAT default compares per --order, the orders alternating (so that drift reaches
    them alike), against the reference: per order the median seconds, the median interval
    half-width, verdicts against the reference, and how many runs found an order effect
    (a run depending on the run before it: carry-over)."""
    stats = {o: {"widths": [], "seconds": [], "wrong": 0, "undecided": 0, "judged": 0,
                 "order_effects": 0, "by_key": {}} for o in a.orders}
    for i in range(a.repeat):
        for order in a.orders:
            st = stats[order]
            text, s = run(["--size", a.size, "--order", order])
            if text is None:
                continue
            got = vs_in_place(text)
            widths = [half_width(*v[:3]) for v in got.values()]
            for key, v in got.items():
                st["by_key"].setdefault(key, []).append(half_width(*v[:3]))
            st["widths"].append(statistics.median(widths))
            st["seconds"].append(s)
            if any(l.startswith("order: ") for l in text.splitlines()):
                st["order_effects"] += 1
            for key, (r, _, _, verdict) in ref.items():
                if verdict in ("slower", "faster") and r >= 1.10:
                    st["judged"] += 1
                    if key not in got or got[key][3] == "none":
                        st["undecided"] += 1
                    elif got[key][3] != verdict:
                        st["wrong"] += 1
                        print(f"{label} --order {order} #{i + 1}: OPPOSITE verdict for {key}: {got[key]} (reference {ref[key]})")
            print(
                f"{label} --order {order} #{i + 1}: {s:.1f} s, median vs-in-place interval "
                f"±{st['widths'][-1]:.1f} % over {len(widths)} ratios; {rounds_line(text)}"
            )
    for order in a.orders:
        st = stats[order]
        if not st["seconds"]:
            print(f"{label} --order {order}: no run completed")
            continue
        print(
            f"{label} --order {order}: {statistics.median(st['seconds']):.1f} s median; median "
            f"interval ±{statistics.median(st['widths']):.1f} % (runs: "
            f"{', '.join(f'±{w:.1f}' for w in st['widths'])}); of {st['judged']} effects of 10 % "
            f"or more, {st['judged'] - st['wrong'] - st['undecided']} got the reference's "
            f"verdict, {st['undecided']} no verdict, {st['wrong']} the opposite one; an order "
            f"effect (carry-over) in {st['order_effects']} of {a.repeat} runs"
        )
    if len(a.orders) == 2:
        # The same comparison under the two orders: the geometric mean of its interval
        # half-widths over the runs, per order, and their ratio.
        x, y = a.orders
        gm = lambda v: math.exp(sum(math.log(max(w, 0.05)) for w in v) / len(v))
        keys = sorted(k for k in stats[x]["by_key"] if k in stats[y]["by_key"])
        ratios = []
        for k in keys:
            wx, wy = gm(stats[x]["by_key"][k]), gm(stats[y]["by_key"][k])
            ratios.append((wx / wy, k, wx, wy))
        print(f"{label}: per vs-in-place comparison, interval half-width {x} / {y} "
              f"(geometric means over the runs): median {statistics.median(r[0] for r in ratios):.2f} "
              f"over {len(ratios)} comparisons; widest ones:")
        for r, k, wx, wy in sorted(ratios, key=lambda t: -max(t[2], t[3]))[:8]:
            print(f"  {k[0]} {k[1]}: ±{wx:.1f} % {x}, ±{wy:.1f} % {y} ({r:.2f})")


def a_a(a, label):
    """A/A: twins in one compare, and two separate compares diffed."""
    false = 0
    twin = "jemalloc:dirty_decay_ms=10000"
    for i in range(a.repeat):
        text, s = run(
            ["--size", a.size, "--allocators", f"jemalloc;{twin}",
             "--variants", "in-place,out-of-place"]
        )
        if text is None:
            continue
        for line in text.splitlines():
            m = VS_FASTEST.search(line)
            if m and {m["a"], m["b"]} == {"jemalloc", twin}:
                false += 1
                print(f"{label} A/A #{i + 1} false verdict: {line[:200]}")
    print(f"{label} A/A in one compare: {false} false verdicts in {2 * a.repeat} twin comparisons")

    import json
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        files = []
        for k in range(2):
            text, _ = run(["--size", a.size, "--format", "json"])
            if text is None:
                break
            f = f"{d}/{k}.json"
            with open(f, "w") as out:
                out.write(text)
            files.append(f)
        if len(files) < 2:
            print(f"{label} A/A two runs diffed: not measured (a compare step failed, above)")
            return
        out = subprocess.run([ALLOCLAB, "diff", "--format", "json", *files],
                             capture_output=True, text=True, check=False)
        try:
            rows = json.loads(out.stdout)["diff"]["cells"]
        except (ValueError, KeyError, TypeError):
            # diff refuses what it cannot compare (for instance sessions measured on
            # different machine states); that is an outcome, not a crash.
            print(f"{label} A/A two runs diffed: REFUSED by alloclab diff (exit "
                  f"{out.returncode}): {out.stderr.strip()[-600:]}")
            return
        called = [r for r in rows if r["verdict"] in ("faster", "slower")]
        print(f"{label} A/A two runs diffed: {len(called)} false verdicts in {len(rows)} cells")
        for r in called:
            print(f"  {r['cell']}: {r['ratio']:.3f} [{r['ratio_ci_low']:.3f}, {r['ratio_ci_high']:.3f}]")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="1000000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--orders", default="blocked,shuffled",
                   help="the --order values whose default compares are measured, alternating")
    p.add_argument("--neighbour", action="store_true",
                   help="also measure beside stress-ng on one core (CPU + memory bandwidth)")
    a = p.parse_args()
    a.orders = [o for o in a.orders.split(",") if o]
    if a.neighbour and subprocess.run(["sh", "-c", "command -v stress-ng"],
                                      capture_output=True).returncode != 0:
        sys.exit("--neighbour needs stress-ng (Debian: apt-get install stress-ng)")

    ref_text, ref_s = run(["--size", a.size, "--precision", "2"])
    if ref_text is None:
        sys.exit("the --precision 2 reference failed (above): nothing to judge verdicts against")
    ref = vs_in_place(ref_text)
    print(f"--precision 2 (quiet): {ref_s:.1f} s; {rounds_line(ref_text)}")

    defaults(a, ref, "quiet")
    a_a(a, "quiet")
    if not a.neighbour:
        return
    neighbour = subprocess.Popen(NEIGHBOUR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)  # the stressors running before the first measurement
        print(f"neighbour: {' '.join(NEIGHBOUR)} (pid {neighbour.pid})")
        defaults(a, ref, "neighbour")
        a_a(a, "neighbour")
    finally:
        neighbour.terminate()
        neighbour.wait()


if __name__ == "__main__":
    main()
