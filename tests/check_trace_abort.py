#!/usr/bin/env python3
"""tests/check_trace_abort.py TIMELINE RANKS COMMAND...: run COMMAND (a job that aborts
on rank 0 after user phases and a barrier) with COURIER_TRACE set; it must fail, and
leave one part per rank, each a complete JSON trace; rank 0's must hold the user
phases it ended before the abort. Then TIMELINE (scripts/trace_timeline.py) must draw
the parts and say the trace was not merged."""
import glob
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_trace_abort: " + msg)
    sys.exit(1)


def main():
    timeline, ranks, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        r = subprocess.run(cmd, env=dict(os.environ, COURIER_TRACE=path), capture_output=True,
                           text=True)
        if r.returncode == 0:
            fail("the command succeeded; it should have aborted")
        parts = sorted(glob.glob(path + ".rank*.part"))
        if len(parts) != ranks:
            fail(f"{len(parts)} parts for {ranks} ranks: {parts}")
        for part in parts:
            with open(part, encoding="utf-8") as f:
                try:
                    doc = json.load(f)
                except ValueError as e:
                    fail(f"{os.path.basename(part)} is not complete JSON: {e}")
        with open(path + ".rank0.part", encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        phases = {e["name"] for e in events if e.get("cat") == "user"}
        for want in ("setup", 'a "quoted" phase'):
            if want not in phases:
                fail(f"rank 0's part lacks the user phase {want!r}; it has {sorted(phases)}")
        if not any(e["name"] == "cr_barrier" for e in events):
            fail("rank 0's part lacks the barrier it completed")
        t = subprocess.run([timeline, os.path.join(d, "t.png"), path], capture_output=True,
                           text=True)
        if t.returncode != 0 or "was not merged" not in t.stderr:
            fail(f"the timeline did not read the parts: {t.returncode} {t.stdout} {t.stderr}")
    print(f"check_trace_abort: {ranks} parts, each complete JSON; rank 0's has the user "
          "phases and its barrier; the timeline drew them")


main()
