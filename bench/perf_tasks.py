#!/usr/bin/env python3
"""Where a proxy's CPU goes, by async task: reads `perf script` output of a DWARF call-graph
recording (bench/profile-echo.sh ... record) and gives each sample to the tokio task whose
future it ran in (the first frame below tokio's poll machinery), to the runtime's parking
(epoll and the switches around it), or to CycloneDDS's receive thread. Then the callers of
`memmove`: which copies a message makes on its way.

    perf script -i OUT/perf.data -F comm,pid,tid,ip,sym --no-inline > OUT/script.txt
    python3 bench/perf_tasks.py OUT/script.txt [--per N] [--hz 4999] [--calls SYMBOL]

Shares are of all samples of the recorded processes (both proxies together); with --per N
(the round trips recorded) also microseconds of CPU per round trip (samples / hz / N). With
--calls SYMBOL, also what that function's samples call directly (a substring of a frame).
"""
import argparse
import collections
import re
import sys

# Frames of tokio's scheduler that run a task's future: the task is the first frame past them.
POLL = ("tokio::runtime::task::raw::poll", "tokio::runtime::task::core::Core<T,S>::poll",
        "tokio::runtime::task::harness::Harness<T,S>::poll")
PARK = ("park_driver", "park_internal", "park_timeout", "Context::park")
GENERIC = ("tokio::", "<tracing::instrument", "core::", "<core::")
# roam's tasks, by the function that spawns them.
ROAM_TASKS = {
    "roam_net::runtime::start": "roam: routing (the router runtime's loop)",
    "roam_net::quic::streams::accept_streams": "roam: QUIC stream reader",
    "roam_net::quic::QuicTransport::lane_for": "roam: QUIC lane writer",
    "roam::proxy::import::import": "roam: import (open, DDS write)",
}


def samples(path):
    """Each sample's frames, leaf first."""
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if cur is not None:
                    yield cur
                cur = None
            elif line[0] not in "\t ":
                cur = []
            elif cur is not None:
                parts = line.strip().split(None, 1)
                cur.append(parts[1] if len(parts) > 1 else "?")
    if cur is not None:
        yield cur


def task_of(frames):
    if any(p in f for f in frames for p in PARK):
        return "tokio: parked (epoll_wait, switches)"
    for i, f in enumerate(frames):
        if f.startswith(POLL):
            blocking = False
            for g in reversed(frames[:i]):
                if not g.startswith(GENERIC):
                    if "BlockingTask" in g:
                        # spawn_blocking's work (sealing or writing a large message): named by
                        # the first function of ours below it, not counted as scheduling.
                        blocking = True
                        continue
                    name = re.sub(r"::\{\{closure\}\}.*", "", g)[:90]
                    if blocking:
                        return "blocking: " + name
                    return ROAM_TASKS.get(name, name)
            return "tokio: blocking pool" if blocking else "tokio: scheduling"
    if any("ddsi_recv_thread" in f for f in frames):
        return "CycloneDDS receive thread (reading, sealing, hand-off)"
    if any("worker::run" in f for f in frames):
        return "tokio: scheduling"
    return "other: " + (frames[-1][:60] if frames else "?")


def memmove_caller(frames):
    useful = [g for g in frames[1:6] if not g.startswith(("core::", "<core::", "alloc::"))]
    return " <- ".join(g[:60] for g in useful[:2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("script")
    ap.add_argument("--per", type=int, help="round trips (or messages) recorded")
    ap.add_argument("--hz", type=float, default=4999.0, help="perf record's -F")
    ap.add_argument("--calls", help="also list what this function calls")
    args = ap.parse_args()
    all_samples = list(samples(args.script))
    n = len(all_samples)
    if n == 0:
        sys.exit("no samples in " + args.script)

    def us(k):
        return f"  {1e6 * k / args.hz / args.per:6.1f} us" if args.per else ""

    tasks = collections.Counter(task_of(s) for s in all_samples)
    print(f"{n} samples{us(n) + ' per round trip' if args.per else ''}\n\nby task:")
    for t, k in tasks.most_common(15):
        print(f"{100 * k / n:5.1f}%{us(k)}  {t}")
    copies = collections.Counter(memmove_caller(s) for s in all_samples
                                 if s and "memmove" in s[0])
    print(f"\nmemmove, {100 * sum(copies.values()) / n:.1f}% in all, by caller:")
    for t, k in copies.most_common(10):
        print(f"{100 * k / n:5.1f}%{us(k)}  {t}")
    if args.calls:
        key = args.calls
        children = collections.Counter()
        for s in all_samples:
            hits = [j for j, f in enumerate(s) if key in f]
            if hits:
                j = max(hits)
                children[s[j - 1][:90] if j > 0 else "(itself)"] += 1
        print(f"\n{key}: {100 * sum(children.values()) / n:.1f}%, calling:")
        for t, k in children.most_common(12):
            print(f"{100 * k / n:5.1f}%{us(k)}  {t}")


if __name__ == "__main__":
    main()
