#!/usr/bin/env python3
"""A step model of apps/fanout under different handling policies (issue 17).

    scripts/flow_model.py [--ranks 2,4] [--depth 7] [--policies fifo,deep,...]

Not Courier: a couple of hundred lines that ask what memory a *policy* needs, before
anyone builds it into the mailbox. Every rank starts --seeds trees; the handler of
a record of depth d < D sends F records of depth d + 1 to random ranks. In one
step each rank receives what arrived, handles up to --per-step records (how many a
rank handles in the time a block takes to arrive), and sends: once after handling,
or also after every --send-every records handled, as the runtime sends a buffer as
soon as it is full and a slot is free (the model's first version sent only once per
step, which let a paused rank put at most one cap on its way per step).
Records wait in a send buffer per destination until it holds --buffer records, or
until the rank has nothing to handle or holds more than half the cap; every block
that is ready goes in that step (up to --slots blocks in flight per rank; no limit
by default). A sent block
arrives one step later. A rank admits a seed only when it has nothing to
handle and holds less than the cap.

Memory per rank = records in send buffers + in flight from it + received and not
handled, times --record-bytes (capacity slack and headers are not modelled).

Policies:
  fifo         handle every received record, oldest first (Courier before issue 17,
               and any handler that does not wait)
  deep         handle every received record, deepest first (the program's depth,
               or the number of handler hops since user code: both are the same here)
  deep-block   deepest first by block: a received block is handled whole, the block
               with the deepest record first (what prototype exp-priority built)
  deep-pause   deepest first; over the cap, handle only records as deep as the
               deepest this rank has seen (leaves, here), else wait; a rank that
               found nothing to do for 3 steps handles anyway (a relief)
  deep-send    deepest first, and a rank whose send buffers hold the cap does not
               handle until they drain (relief after 3 idle steps): handling
               keeps pace with sending
  deep-held    as deep-send, but the pause counts the records in flight too: a rank
               puts at most the cap on its way per step, however many slots
  credit       deepest first, and a sender may have at most --credits records at a
               destination (in flight or not yet handled there); a rank whose send
               buffers are full does not handle (relief after 3 idle steps)

Prints one line per policy and rank count: the largest peak of any rank, the
steps the run took (a time proxy), the reliefs, and where that rank's peak was:
send buffers, in flight, received and not handled."""
import argparse
import heapq
import random
import sys


def int_list(text):
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got '{text}'")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got '{text}'")
    return values


POLICIES = ("fifo", "deep", "deep-block", "deep-pause", "deep-send", "deep-held", "credit")


def policy_list(text):
    names = text.split(",")
    for n in names:
        if n not in POLICIES:
            raise argparse.ArgumentTypeError(f"unknown policy '{n}': expected {', '.join(POLICIES)}")
    return names


class Model:
    def __init__(self, a, ranks, policy):
        self.a, self.P, self.policy = a, ranks, policy
        self.rnd = random.Random(a.seed)
        self.pool = [[] for _ in range(ranks)]          # heap of (key, tie, depth, src)
        self.out = [[[] for _ in range(ranks)] for _ in range(ranks)]
        self.out_n = [0] * ranks
        self.pool_n = [0] * ranks                      # records received, not handled
        self.flight = []                                # (arrival step, src, dst, depths)
        self.in_flight = [0] * ranks
        self.blocks_in_flight = [0] * ranks
        self.owed = [[0] * ranks for _ in range(ranks)]  # records src has at dst (credit)
        self.seeds = [a.seeds] * ranks
        self.deepest_seen = [0] * ranks
        self.peak = [0] * ranks
        self.seq = self.step = self.handled = self.reliefs = self.idle = 0
        self.parts = (0, 0, 0)
        self.total = a.seeds * ranks * sum(a.fanout ** d for d in range(a.depth + 1))

    def held(self, r):
        return self.out_n[r] + self.in_flight[r] + self.pool_n[r]

    def tie(self):
        """Among records of one depth: oldest first, or newest first (--ties)."""
        return self.seq if self.a.ties == "oldest" else -self.seq

    def push(self, r, depth, src):
        self.seq += 1
        key = self.seq if self.policy == "fifo" else -depth
        heapq.heappush(self.pool[r], (key, self.tie(), depth, src))
        self.pool_n[r] += 1

    def push_block(self, r, depths, src):
        """deep-block: the block waits as one entry, keyed by its deepest record;
        handling it hands its records to the head of the pool one by one."""
        self.seq += 1
        heapq.heappush(self.pool[r], (-max(depths), self.tie(), None, src, list(depths)))
        self.pool_n[r] += len(depths)

    def pop(self, r):
        self.pool_n[r] -= 1
        head = self.pool[r][0]
        if head[2] is not None:
            heapq.heappop(self.pool[r])
            return head[2], head[3]
        depths = head[4]
        depth = depths.pop()
        if not depths:
            heapq.heappop(self.pool[r])
        else:  # the rest of the block stays first: a block is handled whole
            self.pool[r][0] = (float("-inf"),) + head[1:]
        return depth, head[3]

    def head_depth(self, r):
        head = self.pool[r][0]
        return head[2] if head[2] is not None else head[4][-1]

    def arrive(self):
        later = []
        for item in self.flight:
            when, src, dst, depths = item
            if when > self.step:
                later.append(item)
                continue
            self.in_flight[src] -= len(depths)
            self.blocks_in_flight[src] -= 1
            if self.policy == "deep-block":
                self.push_block(dst, depths, src)
                continue
            for d in depths:
                self.push(dst, d, src)
        self.flight = later

    def may_handle(self, r):
        """Whether rank r handles the head of its pool now (False: it waits)."""
        a, pool = self.a, self.pool[r]
        if self.policy in ("fifo", "deep"):
            return True
        if self.policy == "deep-pause":
            blocked = self.held(r) >= a.cap and self.head_depth(r) < self.deepest_seen[r]
        elif self.policy == "deep-send":
            blocked = self.out_n[r] >= a.cap
        elif self.policy == "deep-held":
            blocked = self.out_n[r] + self.in_flight[r] >= a.cap
        else:
            blocked = self.out_n[r] + a.fanout > a.cap
        if not blocked:
            return True
        if self.idle < 3:
            return False
        self.reliefs += 1
        return True

    def handle(self, r):
        a = self.a
        if self.seeds[r] and not self.pool[r] and self.held(r) < a.cap:
            self.seeds[r] -= 1
            self.owed[r][r] += 1
            self.push(r, 0, r)
        if not self.pool[r] or not self.may_handle(r):
            return False
        depth, src = self.pop(r)
        self.owed[src][r] -= 1
        self.deepest_seen[r] = max(self.deepest_seen[r], depth)
        self.handled += 1
        if depth < a.depth:
            for _ in range(a.fanout):
                self.out[r][self.rnd.randrange(self.P)].append(depth + 1)
            self.out_n[r] += a.fanout
        return True

    def send(self, r):
        """Every full block goes, and partial ones when eager, as long as a slot is
        free (--slots)."""
        a, sent = self.a, False
        eager = not self.pool[r] or 2 * self.out_n[r] >= a.cap
        for dst in range(self.P):
            while self.slot_free(r) and self.send_block(r, dst, eager):
                sent = True
        return sent

    def slot_free(self, r):
        """--slots: at most that many blocks of one rank in flight (0: no limit)."""
        return self.a.slots == 0 or self.blocks_in_flight[r] < self.a.slots

    def send_block(self, r, dst, eager):
        a, buf = self.a, self.out[r][dst]
        if not buf or not (len(buf) >= a.buffer or eager):
            return False
        room = a.buffer
        if self.policy == "credit":
            room = min(room, a.credits - self.owed[r][dst])
        if room <= 0:
            return False
        block, self.out[r][dst] = buf[:room], buf[room:]
        self.out_n[r] -= len(block)
        self.owed[r][dst] += len(block)
        self.in_flight[r] += len(block)
        self.blocks_in_flight[r] += 1
        self.flight.append((self.step + 1, r, dst, block))
        return True

    def run(self):
        while self.handled < self.total:
            self.step += 1
            self.arrive()
            moved = False
            for r in range(self.P):
                limit = self.a.slow if r == 0 and self.a.slow else self.a.per_step
                for k in range(1, limit + 1):
                    if not self.handle(r):
                        break
                    moved = True
                    if self.a.send_every and k % self.a.send_every == 0:
                        moved |= self.send(r)
                moved |= self.send(r)
                for x in range(self.P):
                    if self.held(x) > self.peak[x]:
                        self.peak[x] = self.held(x)
                        if self.peak[x] >= max(self.peak):
                            self.parts = (self.out_n[x], self.in_flight[x], self.pool_n[x])
            self.idle = 0 if moved else self.idle + 1
        kib = [n * self.a.record_bytes / 1024 for n in self.parts]
        return max(self.peak) * self.a.record_bytes, self.step, self.reliefs, kib


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int_list, default=[2, 4], help="rank counts (default 2,4)")
    p.add_argument("--depth", type=int, default=7, help="tree depth D (default 7)")
    p.add_argument("--fanout", type=int, default=4, help="children per record F (default 4)")
    p.add_argument("--seeds", type=int, default=10, help="trees per rank (default 10)")
    p.add_argument("--buffer", type=int, default=32, help="records per send buffer (default 32: 1 KiB)")
    p.add_argument("--cap", type=int, default=128, help="cap in records (default 128: 4 KiB)")
    p.add_argument("--credits", type=int, default=64, help="records a sender may have at a destination (policy credit)")
    p.add_argument("--record-bytes", type=int, default=32, help="bytes per record (default 32)")
    p.add_argument("--policies", type=policy_list, default=list(POLICIES), help="comma-separated (default all)")
    p.add_argument("--per-step", type=int, default=1, help="records a rank handles per step (default 1)")
    p.add_argument("--slots", type=int, default=0,
                   help="blocks a rank may have in flight, 0 = no limit (default 0)")
    p.add_argument("--send-every", type=int, default=0,
                   help="also send after every N records handled within a step, as the runtime "
                        "does (default 0: only once per step, after handling)")
    p.add_argument("--slow", type=int, default=0,
                   help="rank 0 handles at most this many records per step, the others "
                        "--per-step: a rank slower than the rest (default 0: none)")
    p.add_argument("--ties", choices=("oldest", "newest"), default="oldest",
                   help="among records (blocks) of one depth, which first (default oldest)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    a = p.parse_args()
    for name, v in (("--depth", a.depth), ("--fanout", a.fanout), ("--seeds", a.seeds),
                    ("--buffer", a.buffer), ("--cap", a.cap), ("--credits", a.credits),
                    ("--record-bytes", a.record_bytes), ("--per-step", a.per_step)):
        if v < 1:
            sys.exit(f"flow_model.py: {name} must be at least 1, got {v}")
    if a.slow < 0:
        sys.exit(f"flow_model.py: --slow must be 0 (no slow rank) or more, got {a.slow}")
    if a.send_every < 0:
        sys.exit(f"flow_model.py: --send-every must be 0 (once per step) or more, got {a.send_every}")
    if a.slots < 0:
        sys.exit(f"flow_model.py: --slots must be 0 (no limit) or more, got {a.slots}")
    print(f"# depth {a.depth}, fan-out {a.fanout}, {a.seeds} trees per rank, buffers of {a.buffer} "
          f"records, cap {a.cap} records, {a.record_bytes} bytes per record, {a.per_step} handled per step, {a.ties} first among equals, "
          f"{a.slots or 'unlimited'} slots, "
          f"sends {'after every %d handled' % a.send_every if a.send_every else 'once per step'}, "
          f"{'rank 0 handles %d per step, ' % a.slow if a.slow else ''}seed {a.seed}")
    print(f"{'policy':<11} {'ranks':>5} {'peak KiB/rank':>14} {'steps':>9} {'reliefs':>8}   "
          f"at the peak, KiB: buffers / in flight / received")
    for policy in a.policies:
        for ranks in a.ranks:
            peak, steps, reliefs, parts = Model(a, ranks, policy).run()
            print(f"{policy:<11} {ranks:>5} {peak / 1024:>14.1f} {steps:>9} {reliefs:>8}   "
                  f"{parts[0]:.1f} / {parts[1]:.1f} / {parts[2]:.1f}", flush=True)


if __name__ == "__main__":
    main()
