#!/usr/bin/env python3
"""Where a server's CPU goes, by stage, from `perf script` output.

    perf record -e cpu-clock -F 4999 --call-graph dwarf,16384 -p PID -o FILE -- sleep 10
    perf script -i FILE -F comm,tid,ip,sym | bench/perf_breakdown.py REQUESTS CPU_US_PER_REQUEST [gateway]

With `gateway` last, the stages are the gateway's end to end (bench/gateway_perf.sh):
accepting deliveries, the writer's transactions, and the worker's forwards.

Each sample goes to the first stage (in the order of STAGES) that claims its stack: a
stage claims a stack when one of its patterns occurs in any frame, or, for a stage with
an anchor, in the frame the anchor called (the anchor's work is split by what it called).
A stage's share of the samples is turned into microseconds per request with the CPU per
request measured without perf (perf's unwinding inflates the total, not the shares).
"""
import sys
from collections import Counter

# (stage, thread, anchor, patterns). Thread "sqlite" is the store's writer, "" the others.
STAGES = [
    ("store: checkpoint (WAL into the database file)", "sqlite", None, ["sqlite3Checkpoint"]),
    ("store: fsync at commit", "sqlite", None, ["unixSync"]),
    ("store: WAL frames written at commit", "sqlite", None, ["sqlite3WalFrames", "pagerWalFrames"]),
    ("store: the effect (the handler's SQL)", "sqlite", "receive_in_savepoint", ["call_once"]),
    ("store: receipt lookup", "sqlite", "receive_in_savepoint", ["query_row"]),
    ("store: receipt insert", "sqlite", "receive_in_savepoint", ["execute_with_bound", "Statement::execute"]),
    ("store: savepoint per delivery", "sqlite", None, ["Savepoint", "savepoint"]),
    ("store: receive bookkeeping", "sqlite", None, ["receive_in_savepoint"]),
    ("store: begin, commit, answers", "sqlite", None, ["commit_batch", "execute_batch", "sync::oneshot"]),
    ("store: writer waiting for work", "sqlite", None, ["blocking_recv", "futex", "gather"]),
    ("store: other", "sqlite", None, [""]),
    ("http: response write (writev)", "", None, ["writev"]),
    ("http: request read (recv)", "", None, ["__libc_recv", "recvfrom", "poll_read_priv"]),
    ("runtime: epoll and parking", "", None, ["epoll_wait", "park", "Driver::turn"]),
    ("delivery: signature verification", "", None, ["Scheme>::verify", "::verify"]),
    ("delivery: JSON parse", "", None, ["json::parse"]),
    ("delivery: event contract", "", None, ["_contract"]),
    ("delivery: queue to the writer, answer back", "", None, ["sync::mpsc", "sync::oneshot", "receive_boxed", "Semaphore"]),
    ("delivery: answer rendered", "", None, ["into_response"]),
    ("delivery: body read, rest of the pipeline", "", None, ["Inbound", "inbound::", "::deliver"]),
    ("http: request parse (hyper)", "", None, ["Http1Transaction>::parse", "parse_headers"]),
    ("http: response encode (hyper)", "", None, ["Http1Transaction>::encode"]),
    ("http: handler's state, routing, service", "", None, ["axum::", "tower::", "Router"]),
    ("http: connection and task machinery", "", None, ["hyper::", "connection::", "Core<T,S>::poll", "spawn"]),
    ("other", "", None, [""]),
]

# The gateway end to end: what one event costs, from the inbound delivery to its recorded
# forward. Same rules; the writer's stages are split by the write they belong to.
GATEWAY_STAGES = [
    ("writer: checkpoint (WAL into the database file)", "sqlite", None, ["sqlite3Checkpoint", "walCheckpoint"]),
    ("writer: fsync at commit", "sqlite", None, ["unixSync"]),
    ("writer: WAL frames written at commit", "sqlite", None, ["sqlite3WalFrames", "pagerWalFrames"]),
    ("writer: completions (attempt row, job update, breakers)", "sqlite", None, ["complete_all", "jobs::complete"]),
    ("writer: claims (polls that find nothing due)", "sqlite", None, ["jobs::claim"]),
    ("writer: accept: the event and its jobs", "sqlite", None, ["store_event", "accept_leasing"]),
    ("writer: accept: receipt lookup and insert, savepoint", "sqlite", None, ["receive_in_savepoint", "avepoint"]),
    ("writer: begin, commit, answers", "sqlite", None, ["commit_batch", "execute_batch", "oneshot"]),
    ("writer: other", "sqlite", None, [""]),
    ("worker: the forward over HTTP (hyper's pooled client)", "", None,
     ["HttpDestination", "reqwest", "hyper_util::client", "hyper::client", "client::conn"]),
    ("worker: its loop, recording, spawning attempts", "", None, ["idemgate_worker"]),
    ("inbound: response write (writev)", "", None, ["writev"]),
    ("inbound: request read (recv)", "", None, ["__libc_recv", "recvfrom"]),
    ("runtime: epoll and parking", "", None, ["epoll_wait", "park", "Driver::turn"]),
    ("inbound: signature verification", "", None, ["::verify"]),
    ("inbound: strict JSON parse", "", None, ["json::parse"]),
    ("inbound: hyper, routing, the pipeline to the writer and back", "", None,
     ["Inbound", "inbound::", "gateway::deliver", "receive_boxed", "idemgate_http", "hyper::", "axum", "tower"]),
    ("other", "", None, [""]),
]


def samples(lines):
    comm, stack = None, []
    for line in lines:
        if not line.strip():
            if comm is not None:
                yield comm, stack
            comm, stack = None, []
        elif not line.startswith(("\t", " ")) or comm is None:
            comm = line.split()[0]
        else:
            parts = line.strip().split(None, 1)
            stack.append(parts[1] if len(parts) > 1 else "")
    if comm is not None:
        yield comm, stack


def claims(anchor, patterns, stack):
    if anchor is None:
        return any(p in frame for p in patterns for frame in stack)
    for i, frame in enumerate(stack):
        if anchor in frame:
            return i > 0 and any(p in stack[i - 1] for p in patterns)
    return False


def stage_of(stages, comm, stack):
    for name, thread, anchor, patterns in stages:
        if (thread in comm if thread else "sqlite" not in comm) and claims(anchor, patterns, stack):
            return name
    return "other"


def main():
    requests = float(sys.argv[1]) if len(sys.argv) > 1 else 0
    cpu_us = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    stages = GATEWAY_STAGES if sys.argv[3:4] == ["gateway"] else STAGES
    counts = Counter(stage_of(stages, comm, stack) for comm, stack in samples(sys.stdin))
    total = sum(counts.values())
    print(f"{total} samples" + (f"; {cpu_us:.1f} µs CPU per request measured without perf" if cpu_us else ""))
    for name, *_ in stages:
        if counts[name]:
            share = counts[name] / total
            us = f"{share * cpu_us:6.1f} µs" if cpu_us else ""
            print(f"{100 * share:5.1f} %  {us}  {name}")


if __name__ == "__main__":
    main()
