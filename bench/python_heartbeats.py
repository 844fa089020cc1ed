#!/usr/bin/env python3
"""How many heartbeats per second one Python process sustains for many
consumers (AsyncConsumer, one connection each), and the CPU it uses.

    bench/python_heartbeats.py --groupcoordd build/server/groupcoordd --zk 127.0.0.1:2181 \\
        [--consumers 1000] [--groups 10] [--interval 0.1] [--seconds 20]

It starts its own groupcoordd on 127.0.0.1 (a fresh ZooKeeper root), or
uses --bootstrap HOST:PORT; creates the groups; joins every consumer; then
for --seconds counts the heartbeats answered NONE and the process's CPU
time. --interval is each consumer's heartbeat interval: the offered load is
consumers / interval heartbeats a second, and the figure printed is what
was answered. Not part of ctest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from groupcoord import Admin, AsyncConsumer, ConsumerConfig, parse_bootstrap  # noqa: E402
from groupcoord.errors import ErrorCode  # noqa: E402
from groupcoord.protocol import HeartbeatResponse  # noqa: E402


def start_server(binary: str, zk: str, workdir: str) -> tuple[subprocess.Popen, int]:
    """A groupcoordd on 127.0.0.1 with a root of its own; its process and port."""
    port_file = os.path.join(workdir, "port")
    root = f"/py-bench-{os.getpid()}-{int(time.time())}"
    log = open(os.path.join(workdir, "groupcoordd.log"), "wb")
    proc = subprocess.Popen([binary, "--listen-address=127.0.0.1", "--listen-port=0", f"--port-file={port_file}",
                             f"--zk-connect={zk}", f"--zk-root={root}", "--http-port=0"], stdout=log, stderr=log)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = Path(port_file).read_text().strip() if os.path.exists(port_file) else ""
        if text.isdigit() and int(text) > 0:
            return proc, int(text)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"groupcoordd did not start; see {workdir}/groupcoordd.log")


def counting(consumer: AsyncConsumer, counter: list[int]) -> None:
    """Counts the heartbeats of ``consumer`` answered NONE."""
    member = consumer.member
    original = member.on_response

    def on_response(send, response, sent_at, now):  # type: ignore[no-untyped-def]
        if isinstance(response, HeartbeatResponse) and response.error == ErrorCode.NONE:
            counter[0] += 1
        original(send, response, sent_at, now)
    member.on_response = on_response  # type: ignore[method-assign]


async def run(bootstrap: list[tuple[str, int]], args: argparse.Namespace) -> None:
    groups = [f"pybench-{os.getpid()}-{g}" for g in range(args.groups)]
    with Admin(bootstrap) as admin:
        for g in groups:
            admin.create_group(g, args.session_timeout, [], ephemeral=True)
    counter = [0]
    consumers = []
    for i in range(args.consumers):
        c = AsyncConsumer(ConsumerConfig(bootstrap, groups[i % len(groups)], client_id=f"bench-{i}",
                                         heartbeat_interval=args.interval, request_timeout=5.0))
        counting(c, counter)
        consumers.append(c)
    stop = asyncio.Event()

    async def drive(c: AsyncConsumer) -> None:
        while not stop.is_set():
            await c.poll(0.5)

    join_start = time.monotonic()
    tasks = [asyncio.create_task(drive(c)) for c in consumers]
    while sum(c.member.is_member() for c in consumers) < len(consumers):
        await asyncio.sleep(0.2)
        if time.monotonic() - join_start > 120:
            raise SystemExit(f"only {sum(c.member.is_member() for c in consumers)} consumers joined in 120 s")
    joined = time.monotonic() - join_start
    print(f"[bench] {len(consumers)} consumers joined in {joined:.1f} s; measuring for {args.seconds:.0f} s",
          file=sys.stderr, flush=True)
    await asyncio.sleep(1.0)  # past the registrations' rebalances

    counter[0] = 0
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(args.seconds)
    beats, cpu, wall = counter[0], time.process_time() - cpu0, time.monotonic() - wall0
    members = sum(c.member.is_member() for c in consumers)
    print("[bench] stopping: every consumer leaves", file=sys.stderr, flush=True)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(c.close() for c in consumers), return_exceptions=True)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    offered = args.consumers / args.interval
    print(f"consumers {args.consumers} in {args.groups} groups, joined in {joined:.1f} s, "
          f"{members} still members at the end")
    print(f"heartbeats/s {beats / wall:.0f} (offered {offered:.0f}/s, interval {args.interval * 1000:.0f} ms) "
          f"over {wall:.1f} s")
    print(f"cpu {100 * cpu / wall:.0f}% of one core ({cpu / max(beats, 1) * 1e6:.0f} us per heartbeat), "
          f"max rss {rss_mb:.0f} MB, python {sys.version.split()[0]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", help="HOST:PORT of a running groupcoordd (else --groupcoordd and --zk)")
    ap.add_argument("--groupcoordd", help="the groupcoordd binary to start")
    ap.add_argument("--zk", help="ZooKeeper connect string for the started groupcoordd")
    ap.add_argument("--consumers", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--interval", type=float, default=0.1, help="heartbeat interval, seconds")
    ap.add_argument("--session-timeout", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    # SIGTERM (a timeout, say) still stops the groupcoordd started here.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    proc, workdir = None, tempfile.mkdtemp(prefix="groupcoord-pybench-")
    try:
        if args.bootstrap:
            bootstrap = parse_bootstrap(args.bootstrap)
        elif args.groupcoordd and args.zk:
            proc, port = start_server(args.groupcoordd, args.zk, workdir)
            bootstrap = [("127.0.0.1", port)]
        else:
            ap.error("give --bootstrap, or --groupcoordd and --zk")
        asyncio.run(run(bootstrap, args))
    finally:
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
