#!/usr/bin/env python3
"""tests/check_trace_abort.py TIMELINE RANKS COMMAND...: run COMMAND (a job that aborts
on rank 0 after user phases and a barrier, inside a second barrier and a phase left
open) with COURIER_TRACE set; it must fail, and leave one part per rank, each a
complete JSON trace; rank 0's must hold the user phases it ended before the abort,
and the barrier and phase it ended in, marked unfinished. Then TIMELINE (scripts/trace_timeline.py) must draw
the parts and say the trace was not merged, and read rank 1's part once its last
event is cut in the middle (a kill inside a write), saying so.

tests/check_trace_abort.py --events RANKS COMMAND...: COMMAND is a job that a handler
ends with MPI_Abort after seconds of traffic, which Courier does not see; it must fail
and leave one complete part per rank, each holding events besides its metadata: the
parts are written on a timer, not only at barriers, errors Courier sees and exit."""
import glob
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_trace_abort: " + msg)
    sys.exit(1)


def run_to_parts(d, ranks, cmd):
    """Run the failing job with its trace in d: the trace's path and each part's events."""
    path = os.path.join(d, "trace.json")
    r = subprocess.run(cmd, env=dict(os.environ, COURIER_TRACE=path), capture_output=True,
                       text=True)
    if r.returncode == 0:
        fail("the command succeeded; it should have aborted")
    parts = sorted(glob.glob(path + ".rank*.part"))
    if len(parts) != ranks:
        fail(f"{len(parts)} parts for {ranks} ranks: {parts}")
    events = {}
    for part in parts:
        with open(part, encoding="utf-8") as f:
            try:
                events[os.path.basename(part)] = json.load(f)["traceEvents"]
            except ValueError as e:
                fail(f"{os.path.basename(part)} is not complete JSON: {e}")
    return path, events


def check_events(ranks, cmd):
    with tempfile.TemporaryDirectory() as d:
        _, parts = run_to_parts(d, ranks, cmd)
        for name, events in parts.items():
            if not [e for e in events if e.get("ph") != "M"]:
                fail(f"{name} holds no events")
    print(f"check_trace_abort: {ranks} parts, each complete JSON with events")


def check_phases(timeline, ranks, cmd):
    with tempfile.TemporaryDirectory() as d:
        path, parts = run_to_parts(d, ranks, cmd)
        events = parts["trace.json.rank0.part"]
        phases = {e["name"] for e in events if e.get("cat") == "user"}
        for want in ("setup", 'a "quoted" phase'):
            if want not in phases:
                fail(f"rank 0's part lacks the user phase {want!r}; it has {sorted(phases)}")
        if not any(e["name"] == "cr_barrier" and "unfinished" not in e.get("args", {})
                   for e in events):
            fail("rank 0's part lacks the barrier it completed")
        unfinished = {e["name"] for e in events if e.get("args", {}).get("unfinished") == 1}
        for want in ("cr_barrier", "left open"):
            if want not in unfinished:
                fail(f"rank 0's part lacks the unfinished {want!r} it ended in; unfinished: "
                     f"{sorted(unfinished)}")
        t = subprocess.run([timeline, os.path.join(d, "t.png"), path], capture_output=True,
                           text=True)
        if t.returncode != 0 or "was not merged" not in t.stderr:
            fail(f"the timeline did not read the parts: {t.returncode} {t.stdout} {t.stderr}")
        # A kill inside a write cuts a part: the timeline reads it to its last whole event.
        cut = path + ".rank1.part"
        with open(cut, encoding="utf-8") as f:
            text = f.read()
        whole = text.rstrip("]}\n").rstrip("\n").rsplit("\n", 1)[0]
        with open(cut, "w", encoding="utf-8") as f:
            f.write(text[:len(whole) + 1 + 20])  # twenty characters into its last event
        t = subprocess.run([timeline, os.path.join(d, "t.png"), path], capture_output=True,
                           text=True)
        if t.returncode != 0 or "cut by a kill while writing" not in t.stderr \
                or "ranks 1" not in t.stderr:
            fail(f"the timeline did not read a cut part: {t.returncode} {t.stdout} {t.stderr}")
    print(f"check_trace_abort: {ranks} parts, each complete JSON; rank 0's has the user "
          "phases and its barrier; the timeline drew them")


if sys.argv[1] == "--events":
    check_events(int(sys.argv[2]), sys.argv[3:])
else:
    check_phases(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
