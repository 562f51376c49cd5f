"""Load: N questions through `citebot serve` + 2 `citebot worker`s, every part a real process.

A private redis-server (append-only, fsync always, as production should run
it), the fake Slack and a fake LLM that takes --llm-seconds per answer run as
their own processes. Signed app_mention events go to /slack/events at --rate
per second, retried the way Slack retries. Prints end-to-end latency (the event
sent -> the fake Slack receiving the answer's chat.postMessage) p50/p99/max,
throughput, the per-question post count (must be exactly one each) and the peak
memory (VmHWM) of the web process and each worker.

    python bench/load.py [--questions 1000] [--rate 40] [--llm-seconds 1] [--concurrency 32]
                         [--redis single|cluster|both]

`--redis both` runs the same load on one redis-server and then on a 3-master,
3-replica cluster (tests/redis_ha.py) and prints both side by side, with the
Redis commands per question (INFO commandstats of every master).

Goal: all answered exactly once, p99 <= 3 s, web <= 150 MB, each worker <= 250 MB.
Exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faults.drill import APOLOGY, GOOD, Sender, peak_memory_mb, settle
from tests.harness import RedisServer, start_citebot
from tests.kb_fixtures import mini_index
from tests.redis_ha import RedisClusterServers

GOAL_P99_S = 3.0
GOAL_WEB_MB = 150.0
GOAL_WORKER_MB = 250.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=40.0, help="events per second (default 40)")
    parser.add_argument("--llm-seconds", type=float, default=1.0, help="fake LLM latency per answer (default 1)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32, help="jobs in flight per worker (default 32)")
    parser.add_argument("--redis", choices=("single", "cluster", "both"), default="single",
                        help="one redis-server, a 3-master 3-replica cluster, or one run on each (default single)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder with the logs")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="citebot-load-"))
    print(f"building the mini KB index in {root} ...", flush=True)
    index_dir = mini_index(root)
    kinds = ["single", "cluster"] if args.redis == "both" else [args.redis]
    results = [run(kind, args, root / kind, index_dir) for kind in kinds]
    if len(results) > 1:
        print()
        print(f"{'redis':<8} {'once':>5} {'dup':>4} {'lost':>4} {'p50 s':>6} {'p99 s':>6} {'cmds/q':>7}")
        for r in results:
            print(f"{r.kind:<8} {r.once:>5} {r.twice:>4} {r.lost:>4} {r.p50:>6.2f} {r.p99:>6.2f} {r.commands_per_question:>7.1f}")
    if args.keep:
        print(f"logs in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    misses = [m for r in results for m in r.misses]
    print("goal: met" if not misses else "goal: MISSED: " + "; ".join(misses))
    return 1 if misses else 0


@dataclass
class Result:
    kind: str
    once: int
    twice: int
    lost: int
    p50: float
    p99: float
    commands_per_question: float
    misses: list[str]


def run(kind: str, args: argparse.Namespace, root: Path, index_dir: Path) -> Result:
    """One load run on `kind` Redis; prints its figures."""
    if kind == "cluster":
        servers: Any = RedisClusterServers(root / "redis").start()
        redis_url = servers.url
    else:
        servers = RedisServer(root / "redis", persistent=True).start()
        redis_url = servers.url
    citebot = None
    try:
        citebot = start_citebot(
            root / "logs",
            redis_url=redis_url,
            index_dir=index_dir,
            workers=args.workers,
            worker_args=("--concurrency", str(args.concurrency)),
            fakes_as_processes=True,
            CITEBOT_LLM_TIMEOUT=max(10.0, args.llm_seconds * 5),
        )
        citebot.llm.set_script([], default={"text": GOOD, "delay": args.llm_seconds})
        pids = citebot.pids()
        print(f"\n[{kind}] web + {args.workers} workers (concurrency {args.concurrency}) up; sending {args.questions} "
              f"questions at {args.rate:g}/s, LLM {args.llm_seconds:g} s per answer", flush=True)
        commands_before = command_count(servers)
        sender = Sender(citebot.url)
        started = time.time()
        try:
            deliveries = sender.run(args.questions, rate=args.rate, run=f"load-{kind}")
        finally:
            sender.close()
        send_seconds = time.time() - started
        posts = settle(citebot, args.questions, timeout=120, quiet=2.0)
        commands = command_count(servers) - commands_before
        memory = {name: peak_memory_mb(pid) for name, pid in pids.items()}
    finally:
        if citebot is not None:
            citebot.stop()
        servers.stop()

    counts = [len(p) for p in posts.values()]
    once = sum(c == 1 for c in counts)
    twice = sum(c > 1 for c in counts)
    lost = sum(c == 0 for c in counts)
    apologised = sum(1 for p in posts.values() if p and p[0].body.get("text") == APOLOGY)
    latencies = [posts[d.n][0].at - d.sent_at for d in deliveries if posts[d.n]]
    retried = sum(1 for d in deliveries if len(d.attempts) > 1)
    last_post = max((p[0].at for p in posts.values() if p), default=started)
    elapsed = last_post - started
    per_question = commands / max(1, args.questions)

    print(f"[{kind}] questions        {args.questions} sent ({retried} needed a Slack retry) in {send_seconds:.1f} s")
    print(f"[{kind}] answered once    {once}   duplicated {twice}   lost {lost}   apologised {apologised}")
    p50 = statistics.median(latencies) if latencies else float("nan")
    p99 = percentile(latencies, 99) if latencies else float("nan")
    if latencies:
        print(f"[{kind}] latency (s)      p50 {p50:.2f}   p90 {percentile(latencies, 90):.2f}   "
              f"p99 {p99:.2f}   max {max(latencies):.2f}   (event sent -> answer posted)")
        print(f"[{kind}] throughput       {once / elapsed:.1f} answers/s over {elapsed:.1f} s "
              f"(offered {args.rate:g}/s; capacity ~{args.workers * args.concurrency / args.llm_seconds:.0f}/s by LLM slots)")
    print(f"[{kind}] redis commands   {per_question:.1f} per question (INFO commandstats over every master, "
          f"idle workers' polling included)")
    for name, mb in memory.items():
        print(f"[{kind}] peak memory      {name:<8} {mb:.0f} MB" if mb is not None else f"[{kind}] peak memory      {name:<8} n/a")

    misses = []
    if once != args.questions:
        misses.append(f"{kind}: {args.questions - once} questions not answered exactly once")
    if latencies and p99 > GOAL_P99_S:
        misses.append(f"{kind}: p99 above {GOAL_P99_S:g} s")
    if (memory.get("web") or 0) > GOAL_WEB_MB:
        misses.append(f"{kind}: web above {GOAL_WEB_MB:g} MB")
    misses += [f"{kind}: {n} above {GOAL_WORKER_MB:g} MB" for n, mb in memory.items() if n != "web" and (mb or 0) > GOAL_WORKER_MB]
    return Result(kind, once, twice, lost, p50, p99, per_question, misses)


def command_count(servers: Any) -> int:
    """Commands the masters have run (INFO commandstats), replicas' and INFO's own left out."""
    nodes = servers.masters() if isinstance(servers, RedisClusterServers) else [servers]
    total = 0
    for node in nodes:
        with node.client() as client:
            for name, stats in client.info("commandstats").items():
                if name not in ("cmdstat_info", "cmdstat_replconf", "cmdstat_ping", "cmdstat_cluster"):
                    total += int(stats["calls"])
    return total


if __name__ == "__main__":
    sys.exit(main())
