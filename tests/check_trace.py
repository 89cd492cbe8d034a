#!/usr/bin/env python3
"""tests/check_trace.py RANKS COMMAND...: run COMMAND with COURIER_TRACE set to a
scratch file, then check that the file is valid Chrome trace-event JSON from every
rank, with the events docs/tracing.md promises, consistent with each other."""
import collections
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


def main():
    ranks, cmd = int(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        r = subprocess.run(cmd, env=dict(os.environ, COURIER_TRACE=path))
        if r.returncode:
            fail(f"the command exited with {r.returncode}")
        leftovers = [f for f in os.listdir(d) if f.endswith(".part")]
        if leftovers:
            fail(f"part files left behind: {leftovers}")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)  # raises on invalid JSON
    events = doc["traceEvents"]
    names = collections.Counter()
    per_rank = collections.defaultdict(collections.Counter)
    for e in events:
        for key in ("name", "ph", "pid"):
            if key not in e:
                fail(f"event without {key}: {e}")
        if e["ph"] in ("X", "i") and not isinstance(e.get("ts"), (int, float)):
            fail(f"event without a time stamp: {e}")
        if e["ph"] == "X" and not e.get("dur", -1) >= 0:
            fail(f"span with a negative or missing duration: {e}")
        names[e["name"]] += 1
        per_rank[e["pid"]][e["name"]] += 1
    if sorted(per_rank) != list(range(ranks)):
        fail(f"tracks for ranks {sorted(per_rank)}, expected 0..{ranks - 1}")
    for r in range(ranks):
        c = per_rank[r]
        if c["process_name"] != 1:
            fail(f"rank {r} has {c['process_name']} process_name events")
        # cr_comm_destroy's barrier is traced under its own name
        waits = c["cr_barrier"] + c["cr_comm_destroy"]
        if c["cr_barrier"] == 0 or waits != c["barrier done"]:
            fail(f"rank {r}: {waits} barrier waits but {c['barrier done']} barrier ends")
        joined = c["barrier wave joined"]
        if joined != c["barrier done"] + c["barrier wave: not yet"]:
            fail(f"rank {r}: {joined} waves joined, {c['barrier done']} + "
                 f"{c['barrier wave: not yet']} decided")
    sends = sum(v for k, v in names.items() if k.startswith("send"))
    if ranks > 1 and (sends == 0 or names["handle"] == 0):
        fail(f"{sends} sends and {names['handle']} handled buffers")
    if ranks > 1 and sends != names["handle"]:
        fail(f"{sends} buffers sent but {names['handle']} handled")
    print(f"check_trace: valid JSON, {len(events)} events from {ranks} ranks, {sends} buffers "
          f"sent and handled, {names['cr_barrier']} barriers")


main()
