#!/usr/bin/env python3
"""Render the comparison tables from the raw result files of scripts/compare.sh.

    scripts/publish_results.py --write          rewrite the README's and
                                                docs/performance.md's tables from the
                                                two latest runs of each block in
                                                docs/results/
    scripts/publish_results.py --check          exit 1 if either differs from what
                                                --write would write (a test)
    scripts/publish_results.py --print FILE...  print the tables of these files

The comparison on one host is in the files named *-full.tsv (compare.sh --full,
every block), *-bale.tsv (--blocks histogram,gather) and *-kernels.tsv (--blocks
kernels,graph); each block's table rows come from the two latest files holding it.
the one across emulated hosts (compare.sh --hosts 2), in *-hosts.tsv, is rendered
into performance.md's "hosts" table from the two latest of those.

A result file has one tab-separated line per figure, after a header line:
date, commit, machine, mode, block, benchmark, side, unit, round, trial, value.
A value "failed" marks a peer's run that printed its own failure line: that side
gets no figure in that benchmark, and the table says so.

The rule every table follows (docs/performance.md, "The rule"):
- a round's figure of one side is the mean of its trials (GAP's statistic: every
  trial, the first with its set-up included); a side's figure is the median of its
  rounds' figures, min and max beside it;
- Courier's side is "courier"; every other side but the markers ("local loop") is a
  peer, and the best peer (highest rate, lowest time) is the one compared;
- the ratio is Courier's over the peer's, "better" says which way is good.
"""
import argparse
import glob
import os
import re
import statistics
import sys
from collections import OrderedDict

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RESULTS = os.path.join(ROOT, "docs", "results")
README = os.path.join(ROOT, "README.md")
PERF = os.path.join(ROOT, "docs", "performance.md")
FIELDS = ["date", "commit", "machine", "mode", "block", "bench", "side", "unit", "round",
          "trial", "value"]
MARKERS = ("local loop",)


class Run:
    """One result file: its figures by (block, bench) -> side -> round -> trials."""

    def __init__(self, path):
        self.path = path
        self.figures = OrderedDict()
        self.units = {}
        self.failed = set()
        self.date = self.commit = self.machine = self.mode = "?"
        with open(path) as f:
            head = f.readline().rstrip("\n").split("\t")
            if head != FIELDS:
                sys.exit(f"{path}: not a result file (its first line is not the header)")
            for n, line in enumerate(f, 2):
                cols = line.rstrip("\n").split("\t")
                if len(cols) != len(FIELDS):
                    sys.exit(f"{path}:{n}: {len(cols)} fields, not {len(FIELDS)}")
                row = dict(zip(FIELDS, cols))
                self.date, self.commit = row["date"], row["commit"]
                self.machine, self.mode = row["machine"], row["mode"]
                key = (row["block"], row["bench"])
                self.units[key] = row["unit"]
                sides = self.figures.setdefault(key, OrderedDict())
                if row["value"] == "failed":
                    self.failed.add((key, row["side"]))
                    sides.setdefault(row["side"], OrderedDict())
                    continue
                try:
                    value = float(row["value"])
                except ValueError:
                    sys.exit(f"{path}:{n}: '{row['value']}' is not a figure")
                sides.setdefault(row["side"], OrderedDict()).setdefault(row["round"], []).append(value)

    def rounds(self, key, side):
        """Each round's figure: the mean of its trials."""
        per = self.figures.get(key, {}).get(side, {})
        return [statistics.mean(t) for t in per.values() if t]

    def stat(self, key, side):
        r = self.rounds(key, side)
        if not r or (key, side) in self.failed:
            return None
        return statistics.median(r), min(r), max(r)

    def trials(self, key, side):
        """Every trial of every round, in order, by trial number across rounds."""
        per = self.figures.get(key, {}).get(side, {})
        return [t for t in per.values() if t]


class Slot(Run):
    """The n-th latest figures of every block, gathered from the files that hold the
    block (a run of some blocks only, --blocks, adds to the others' latest)."""

    def __init__(self):
        self.path, self.figures, self.units, self.failed = None, OrderedDict(), {}, set()
        self.source = OrderedDict()  # block -> the run its figures come from

    def take(self, run, block):
        for key, sides in run.figures.items():
            if key[0] == block:
                self.figures[key] = sides
                self.units[key] = run.units[key]
        self.failed |= {f for f in run.failed if f[0][0] == block}
        self.source[block] = run


def latest_by_block(kinds=("full", "bale", "kernels"), n=2):
    """n slots: the i-th holds each block's i-th latest run among these kinds of file."""
    files = [p for k in kinds for p in glob.glob(os.path.join(RESULTS, f"*-{k}.tsv"))]
    if not files:
        sys.exit(f"no result files in {RESULTS}")
    runs = [Run(p) for p in sorted(files, key=os.path.basename, reverse=True)]
    blocks = OrderedDict()
    for r in reversed(runs):  # the oldest full run's order of blocks first
        for key in r.figures:
            blocks.setdefault(key[0], None)
    slots = [Slot() for _ in range(n)]
    for block in blocks:
        holding = [r for r in runs if any(k[0] == block for k in r.figures)]
        for slot, r in zip(slots, holding):
            slot.take(r, block)
    return [s for s in slots if s.figures]


def lower_is_better(unit):
    return not unit.endswith("/s")


def fmt(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def spread(s):
    return "-" if s is None else f"{fmt(s[0])} ({fmt(s[1])}-{fmt(s[2])})"


def best_peer(run, key):
    """(side, stat) of the best peer of a benchmark, or (None, None); the failed peers."""
    unit = run.units[key]
    best, failed = (None, None), []
    for side in run.figures[key]:
        if side.startswith("courier") or side in MARKERS:
            continue
        s = run.stat(key, side)
        if s is None:
            failed.append(side)
            continue
        if best[1] is None or (s[0] < best[1][0] if lower_is_better(unit) else s[0] > best[1][0]):
            best = (side, s)
    return best, failed


def ratio(a, b):
    return a[0] / b[0] if a and b and b[0] else None


def headline_rows(run):
    """(block, bench, unit, courier stat, peer side, peer stat, ratio, failed peers)."""
    rows = []
    for key in run.figures:
        if key[0] == "oversubscribed":
            continue
        ours = run.stat(key, "courier")
        (side, theirs), failed = best_peer(run, key)
        if ours is None and side is None:
            continue
        rows.append((key[0], key[1], run.units[key], ours, side, theirs, ratio(ours, theirs), failed))
    return rows


def verdict(r, unit):
    if r is None:
        return "-"
    good = r < 1 if lower_is_better(unit) else r > 1
    return "Courier" if good else "peer"


def about(run):
    return f"{run.date}, commit {run.commit}, {run.machine}, --{run.mode}"


def table_headline(runs, skip=()):
    """The README's and performance.md's table: each benchmark's ratio in each run
    (blocks in skip left out)."""
    a = runs[0]
    others = runs[1:]
    head = "| block | benchmark | unit | peer (the best, as run) | Courier / peer |"
    head += " faster |\n|---|---|---|---|---|---|"
    out = [head]
    for block, bench, unit, ours, side, theirs, r, failed in headline_rows(a):
        if block in skip or (block in ("graph", "kernels") and bench.endswith(", 1 core")
                             and "README" in skip):
            continue
        rs = [r]
        for o in others:
            key = (block, bench)
            if key in o.figures:
                (oside, ot), _ = best_peer(o, key)
                rs.append(ratio(o.stat(key, "courier"), ot))
            else:
                rs.append(None)
        peer = side or "none ran"
        if failed:
            peer += " (failed: " + ", ".join(failed) + ")"
        cells = " / ".join(f"{x:.2f}" if x else "-" for x in rs)
        verdicts = {verdict(x, unit) for x in rs if x}
        v = verdicts.pop() if len(verdicts) == 1 else ("mixed" if verdicts else "-")
        better = "lower" if lower_is_better(unit) else "higher"
        out.append(f"| {block} | {bench} | {unit}, {better} is better | {peer} | {cells} | {v} |")
    return "\n".join(out)


def table_sides(run, blocks, title_note=""):
    """Every side's median (min-max) per benchmark of these blocks, one run."""
    out = ["| block | benchmark | unit | side | median (min-max) of the rounds | "
           "Courier / side |", "|---|---|---|---|---|---|"]
    for key, sides in run.figures.items():
        if key[0] not in blocks:
            continue
        ours = run.stat(key, "courier")
        for side in sides:
            s = run.stat(key, side)
            shown = "failed" if (key, side) in run.failed else spread(s)
            r = ratio(ours, s) if side != "courier" and s else None
            out.append(f"| {key[0]} | {key[1]} | {run.units[key]} | {side} | {shown} | "
                       f"{f'{r:.2f}' if r else '-'} |")
    return "\n".join(out)


def table_graph(run):
    """GAP's kernels: equal cores, the first trial, memory of the whole job."""
    out = ["| kernel | cores | Courier mean (s) | GAP mean (s) | Courier / GAP | Courier's "
           "first trial / later | job memory MiB, Courier / GAP |", "|---|---|---|---|---|---|---|"]
    for (block, bench), sides in run.figures.items():
        if block not in ("graph", "kernels") or "memory" in bench:
            continue
        m = re.match(r"(.*), (\d+) cores?$", bench)
        if not m:
            continue
        mem_key = (block, m.group(1).replace(",", " memory,", 1) + f", {m.group(2)} "
                   f"core{'s' if m.group(2) != '1' else ''}")
        ours, theirs = run.stat((block, bench), "courier"), None
        peer = next((s for s in sides if s != "courier"), None)
        if peer:
            theirs = run.stat((block, bench), peer)
        firsts, laters = [], []
        for t in run.trials((block, bench), "courier"):
            if len(t) > 1:
                firsts.append(t[0])
                laters.extend(t[1:])
        fl = (f"{statistics.median(firsts) / statistics.median(laters):.2f}"
              if firsts and laters and statistics.median(laters) else "-")
        mo = run.stat(mem_key, "courier")
        mp = next((run.stat(mem_key, s) for s in run.figures.get(mem_key, {}) if s != "courier"), None)
        mem = f"{fmt(mo[0]) if mo else '-'} / {fmt(mp[0]) if mp else '-'}"
        r = ratio(ours, theirs)
        out.append(f"| {m.group(1)} | {m.group(2)} | {spread(ours)} | {spread(theirs)} | "
                   f"{f'{r:.2f}' if r else '-'} | {fl} | {mem} |")
    return "\n".join(out)


def one_host_of(bench):
    """The one-host benchmark a multi-host one is measured against: the same job on
    one host with as many ranks ("cc, 2 hosts of 2 ranks" -> "cc, 1 host of 4
    ranks"), or None."""
    m = re.match(r"(.*), (\d+) hosts of (\d+) ranks?(, bound to one core)?$", bench)
    if not m:
        return None
    n = int(m.group(2)) * int(m.group(3))
    return f"{m.group(1)}, 1 host of {n} rank{'s' if n != 1 else ''}"


def table_hosts(runs):
    """Across emulated hosts: each benchmark's Courier against MPI_Alltoallv, against
    the best bale library, and against the same Courier job on one host, each ratio in
    each run."""
    a = runs[0]
    out = ["| benchmark | unit | Courier / MPI_Alltoallv | Courier / best bale (as run) | "
           "Courier / MPI | Courier across hosts / on one host |", "|---|---|---|---|---|---|"]

    def cells(key, pick):
        rs = []
        for r in runs:
            if key not in r.figures:
                rs.append(None)
                continue
            ours = r.stat(key, "courier")
            side = pick(r, key)
            rs.append((ratio(ours, r.stat(key, side)) if side else None, side))
        return rs

    def bale(r, key):
        best = None
        for side in r.figures[key]:
            if side.startswith("bale") and r.stat(key, side):
                if best is None or r.stat(key, side)[0] > r.stat(key, best)[0]:
                    best = side
        return best

    def show(rs, named=False):
        vals = [f"{x[0]:.2f}" if x and x[0] else "-" for x in rs]
        text = " / ".join(vals)
        if named:
            names = sorted({x[1] for x in rs if x and x[1]})
            if names:
                text += " (" + ", ".join(names) + ")"
        return "-" if all(v == "-" for v in vals) else text

    for (block, bench), sides in a.figures.items():
        if block != "hosts":
            continue
        key = (block, bench)
        alltoallv = show(cells(key, lambda r, k: "MPI_Alltoallv" if "MPI_Alltoallv" in r.figures[k] else None))
        best_bale = show(cells(key, bale), named=True)
        mpi = show(cells(key, lambda r, k: "MPI" if "MPI" in r.figures[k] else None))
        one = one_host_of(bench)
        across = []
        for r in runs:
            ours = r.stat(key, "courier")
            there = r.stat((block, one), "courier") if one else None
            across.append((ratio(ours, there), None) if there else None)
        if alltoallv == best_bale == mpi == show(across) == "-":
            continue  # a one-host reference row: its figures are in the ratios above
        out.append(f"| {bench} | {a.units[key]} | {alltoallv} | {best_bale} | {mpi} | "
                   f"{show(across)} |")
    return "\n".join(out)


def link(r):
    return f"[{os.path.basename(r.path)}](docs/results/{os.path.basename(r.path)})"


def lead_of(runs):
    """Which files a table's ratios come from, in their order."""
    if not isinstance(runs[0], Slot):
        named = ", ".join(about(r) for r in runs)
        sources = "; ".join(link(r) for r in runs)
        return (f"Ratios of the runs {named} ({sources}), in that order; rendered by "
                f"`scripts/publish_results.py` from the result files.\n\n")
    lines = [f"- {block}: " + "; ".join(f"{r.date}, commit {r.commit}, --{r.mode} ({link(r)})"
                                         for r in (slot.source[block] for slot in runs
                                                   if block in slot.source))
             for block in runs[0].source]
    machine = next(iter(runs[0].source.values())).machine
    return (f"Each block's two latest runs, in that order (the first ratio from the "
            f"first), on {machine}; rendered by `scripts/publish_results.py` from the "
            f"result files:\n\n" + "\n".join(lines) + "\n\n")


def render(runs, host_runs=()):
    """name -> text of each published table."""
    a = runs[0]
    lead = lead_of(runs)
    # merging is Courier against itself, not against a peer: in performance.md only
    # the README keeps the equal-core rows; the 1-core COST rows are in performance.md
    readme = lead + table_headline(runs, skip=("merging", "README"))
    perf = {"headline": lead.replace("(docs/results/", "(results/") + table_headline(runs),
            "graph": table_graph(a),
            "details": table_sides(a, {"histogram", "gather", "containers", "coll", "merging",
                                       "oversubscribed"})}
    if host_runs:
        hl = ", ".join(about(r) for r in host_runs)
        hs = "; ".join(f"[{os.path.basename(r.path)}](results/{os.path.basename(r.path)})"
                       for r in host_runs)
        perf["hosts"] = (f"Ratios of the runs {hl} ({hs}), in that order; rendered by "
                         f"`scripts/publish_results.py` from the result files.\n\n"
                         + table_hosts(host_runs))
    return readme, perf


BEGIN = "<!-- results: {} (rendered by scripts/publish_results.py; do not edit) -->"
END = "<!-- results: end {} -->"


def splice(text, name, body, path):
    b, e = BEGIN.format(name), END.format(name)
    if b not in text or e not in text:
        sys.exit(f"{path}: no '{b}' ... '{e}' block")
    head, rest = text.split(b, 1)
    _, tail = rest.split(e, 1)
    return f"{head}{b}\n{body}\n{e}{tail}"


def latest(kind, n=2, required=True):
    files = sorted(glob.glob(os.path.join(RESULTS, f"*-{kind}.tsv")))
    if not files and required:
        sys.exit(f"no result files *-{kind}.tsv in {RESULTS}")
    return [Run(p) for p in reversed(files[-n:])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    g.add_argument("--print", nargs="+", metavar="FILE")
    args = ap.parse_args()
    if args.print:
        runs = [Run(p) for p in args.print]
        if all(key[0] == "hosts" for r in runs for key in r.figures):
            print(table_hosts(runs))
            return 0
        readme, perf = render(runs)
        print(readme)
        for name in ("graph", "details"):
            print(f"\n{perf[name]}")
        return 0
    runs = latest_by_block()
    readme, perf = render(runs, latest("hosts", required=False))
    wanted = {README: splice(open(README).read(), "headline", readme, README)}
    text = open(PERF).read()
    for name, body in perf.items():
        text = splice(text, name, body, PERF)
    wanted[PERF] = text
    stale = [p for p, t in wanted.items() if open(p).read() != t]
    if args.check:
        for p in stale:
            print(f"{os.path.relpath(p, ROOT)}: its results tables differ from what "
                  f"scripts/publish_results.py --write renders from docs/results/")
        print(f"publish_results: {len(wanted) - len(stale)} passed, {len(stale)} failed")
        return 1 if stale else 0
    for p in stale:
        with open(p, "w") as f:
            f.write(wanted[p])
    used = OrderedDict((os.path.basename(r.path), None) for s in runs for r in s.source.values())
    print(f"publish_results: {len(stale)} file(s) rewritten from " + ", ".join(used))
    return 0


if __name__ == "__main__":
    sys.exit(main())
