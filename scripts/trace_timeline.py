#!/usr/bin/env python3
"""Draw COURIER_TRACE timelines as a PNG (one row per rank), with gnuplot.

    scripts/trace_timeline.py OUT.png TRACE.json [TRACE2.json ...] [--from MS] [--to MS]
                              [--title TEXT ...]

Each trace becomes one panel, stacked (the same file may be given twice); the time
axis is milliseconds since the trace started. --from/--to cut out a window, e.g. one
BFS level; given once they apply to every panel, given once per trace, to each. Spans are boxes:
handling a received buffer (green), waiting in cr_barrier (grey), waiting for a send
slot or anything else (orange), idle sleep (light blue). Sends are red ticks above
the row, barrier waves black ticks below it. The JSON is the Chrome trace format;
Perfetto (ui.perfetto.dev) and chrome://tracing open the same file interactively.
A job that aborted or was killed leaves its ranks' parts (TRACE.json.rank<R>.part,
each a complete trace up to its last flush) instead of TRACE.json: give TRACE.json
and they are read, with a line naming any rank whose part is missing."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

COLOURS = {"handle": "#2ca02c", "cr_barrier": "#9e9e9e", "cr_comm_destroy": "#9e9e9e",
           "idle sleep": "#9ecae1"}
OTHER_WAIT = "#ff7f0e"


def read_part(part):
    """One rank's part: a complete trace, or, when a kill cut the rank's last write
    (the closing brackets missing), its header and every whole event line before the
    cut, marked "cut"."""
    with open(part, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        pass
    lines = text.split("\n")
    try:
        doc = json.loads(lines[0] + "]}")
    except ValueError:
        sys.exit(f"trace_timeline: {part}: not a Courier trace part (its first line is cut)")
    for line in lines[1:]:
        try:
            doc["traceEvents"].append(json.loads(line.lstrip(",")))
        except ValueError:
            break
    doc["cut"] = True
    return doc


def load(path):
    """A merged trace, or, when the job ended before merging (an abort, a kill), the
    parts PATH.rank<R>.part it left: each is a complete trace of its own. Says which
    ranks' parts are missing."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    else:
        events, expected = [], None
        found = sorted(glob.glob(glob.escape(path) + ".rank*.part"))
        if not found:
            sys.exit(f"trace_timeline: {path}: no such trace, and no {path}.rank*.part parts")
        seen, empty, cut = set(), [], []
        for part in found:
            doc = read_part(part)
            if doc.get("cut"):
                cut.append(doc["otherData"]["rank"])
            events += doc["traceEvents"]
            rank = doc["otherData"]["rank"]
            seen.add(rank)
            if not any(e.get("ph") in ("X", "i") for e in doc["traceEvents"]):
                empty.append(rank)
            expected = doc["otherData"]["ranks"]
        missing = sorted(set(range(expected)) - seen)
        print(f"trace_timeline: {path} was not merged (the job did not end normally): read "
              f"{len(found)} parts" + (f"; missing ranks: {', '.join(map(str, missing))}"
                                       if missing else "")
              + (f"; no events in the parts of ranks {', '.join(map(str, sorted(empty)))}"
                 if empty else "")
              + (f"; cut by a kill while writing, read to their last whole event: the parts "
                 f"of ranks {', '.join(map(str, sorted(cut)))}" if cut else ""), file=sys.stderr)
    ranks = sorted({e["pid"] for e in events if e.get("ph") in ("X", "i")})
    if not ranks:
        sys.exit(f"trace_timeline: {path} holds no events to draw")
    return events, ranks


def write_panel(events, lo, hi, d):
    """Data files for one panel: spans, send ticks, wave ticks. Returns the file names."""
    spans, sends, waves = (open(os.path.join(d, n), "w") for n in ("spans", "sends", "waves"))
    names = [spans.name, sends.name, waves.name]
    for e in events:
        ts = e.get("ts", 0) / 1000.0
        if e.get("ph") == "X":
            end = ts + e.get("dur", 0) / 1000.0
            if end < lo or ts > hi:
                continue
            colour = COLOURS.get(e["name"], OTHER_WAIT)
            a, b = max(ts, lo), min(end, hi)
            height = 0.25 if e["name"] == "handle" else 0.35
            spans.write(f"{(a + b) / 2} {e['pid']} {a} {b} {e['pid'] - height} "
                        f"{e['pid'] + height} 0x{colour[1:]}\n")
        elif e.get("ph") == "i" and lo <= ts <= hi:
            if e["name"].startswith("send"):
                sends.write(f"{ts} {e['pid'] + 0.42}\n")
            elif e["name"].startswith("barrier"):
                waves.write(f"{ts} {e['pid'] - 0.42}\n")
    for f in (spans, sends, waves):
        f.write("nan nan nan nan nan nan 0\n" if f is spans else "nan nan\n")
        f.close()
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--from", dest="lo", type=float, action="append", default=[], help="start, ms")
    ap.add_argument("--to", dest="hi", type=float, action="append", default=[], help="end, ms")
    ap.add_argument("--title", action="append", default=[], help="one per trace")
    a = ap.parse_args()
    try:
        open(a.out, "wb").close()
    except OSError as e:
        sys.exit(f"trace_timeline: cannot write {a.out}: {e.strerror}")
    panels = []
    with tempfile.TemporaryDirectory() as d:
        for k, path in enumerate(a.traces):
            events, ranks = load(path)
            ends = [e.get("ts", 0) / 1000.0 + e.get("dur", 0) / 1000.0 for e in events]
            pick = lambda v, k: v[k] if k < len(v) else (v[0] if len(v) == 1 else None)
            lo = pick(a.lo, k) if pick(a.lo, k) is not None else 0.0
            hi = pick(a.hi, k) if pick(a.hi, k) is not None else max(ends)
            sub = os.path.join(d, str(k))
            os.mkdir(sub)
            title = a.title[k] if k < len(a.title) else os.path.basename(path)
            panels.append((write_panel(events, lo, hi, sub), ranks, lo, hi, title))
        n = len(panels)
        script = [f"set terminal pngcairo size 1400,{260 + 220 * n} font 'sans,10' noenhanced",
                  f"set output '{a.out}'", f"set multiplot layout {n},1",
                  "set xlabel 'ms since the trace started'", "set style fill solid 1.0 noborder",
                  "set key outside right top title 'colour key' box"]
        # The key: one empty series per colour and mark, so gnuplot draws a legend.
        legend = (", NaN with boxes lc rgb '#2ca02c' title 'handling a buffer'"
                  ", NaN with boxes lc rgb '#9e9e9e' title 'waiting in cr_barrier'"
                  ", NaN with boxes lc rgb '#ff7f0e' title 'other wait (send slot, ...)'"
                  ", NaN with boxes lc rgb '#9ecae1' title 'idle sleep'"
                  ", NaN with points pt 2 lc rgb '#d62728' title 'send (above the row)'"
                  ", NaN with points pt 9 lc rgb 'black' title 'barrier wave (below)'")
        for (spans, sends, waves), ranks, lo, hi, title in panels:
            script += [f"set title \"{title}\" noenhanced", f"set xrange [{lo}:{hi}]",
                       f"set yrange [{max(ranks) + 0.8}:{-0.8}]",
                       "set ytics (" + ", ".join(f"'rank {r}' {r}" for r in ranks) + ")",
                       f"plot '{spans}' using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle, "
                       f"'{sends}' using 1:2 with points pt 2 ps 0.5 lc rgb '#d62728' notitle, "
                       f"'{waves}' using 1:2 with points pt 9 ps 0.6 lc rgb 'black' notitle"
                       + legend]
        script.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(script), text=True,
                           stderr=subprocess.PIPE)
        if r.returncode:
            sys.exit("trace_timeline: gnuplot failed:\n" + r.stderr)
    print(f"trace_timeline: wrote {a.out}")


if __name__ == "__main__":
    main()
