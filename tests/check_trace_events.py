#!/usr/bin/env python3
"""tests/check_trace_events.py RANKS COMMAND...: run COMMAND (a job that a handler ends
with MPI_Abort after seconds of traffic) with COURIER_TRACE set; it must fail and
leave one part per rank, each complete JSON holding events besides its metadata:
the parts are written on a timer, not only at barriers, errors Courier sees and exit."""
import glob
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_trace_events: " + msg)
    sys.exit(1)


def main():
    ranks, cmd = int(sys.argv[1]), sys.argv[2:]
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
                    events = json.load(f)["traceEvents"]
                except ValueError as e:
                    fail(f"{os.path.basename(part)} is not complete JSON: {e}")
            real = [e for e in events if e.get("ph") != "M"]
            if not real:
                fail(f"{os.path.basename(part)} holds no events")
    print(f"check_trace_events: {ranks} parts, each complete JSON with events")


main()
