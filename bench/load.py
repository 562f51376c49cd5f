"""Load: N questions through `citebot serve` + 2 `citebot worker`s, every part a real process.

A private redis-server (append-only, fsync always, as production should run
it), the fake Slack and a fake LLM that takes --llm-seconds per answer run as
their own processes. Signed app_mention events go to /slack/events at --rate
per second, retried the way Slack retries. Prints end-to-end latency (the event
sent -> the fake Slack receiving the answer's chat.postMessage) p50/p99/max,
throughput, the per-question post count (must be exactly one each) and the peak
memory (VmHWM) of the web process and each worker.

    python bench/load.py [--questions 1000] [--rate 40] [--llm-seconds 1] [--concurrency 32]

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faults.drill import APOLOGY, GOOD, Sender, peak_memory_mb, settle
from tests.harness import RedisServer, start_citebot
from tests.kb_fixtures import mini_index

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
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder with the logs")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="citebot-load-"))
    print(f"building the mini KB index in {root} ...", flush=True)
    index_dir = mini_index(root)
    redis_server = RedisServer(root / "redis", persistent=True).start()
    cluster = None
    try:
        cluster = start_citebot(
            root / "logs",
            redis_url=redis_server.url,
            index_dir=index_dir,
            workers=args.workers,
            worker_args=("--concurrency", str(args.concurrency)),
            fakes_as_processes=True,
            CITEBOT_LLM_TIMEOUT=max(10.0, args.llm_seconds * 5),
        )
        cluster.llm.set_script([], default={"text": GOOD, "delay": args.llm_seconds})
        pids = cluster.pids()
        print(f"web + {args.workers} workers (concurrency {args.concurrency}) up; sending {args.questions} "
              f"questions at {args.rate:g}/s, LLM {args.llm_seconds:g} s per answer", flush=True)
        sender = Sender(cluster.url)
        started = time.time()
        try:
            deliveries = sender.run(args.questions, rate=args.rate, run="load")
        finally:
            sender.close()
        send_seconds = time.time() - started
        posts = settle(cluster, args.questions, timeout=120, quiet=2.0)
        memory = {name: peak_memory_mb(pid) for name, pid in pids.items()}
    finally:
        if cluster is not None:
            cluster.stop()
        redis_server.stop()

    counts = [len(p) for p in posts.values()]
    once = sum(c == 1 for c in counts)
    twice = sum(c > 1 for c in counts)
    lost = sum(c == 0 for c in counts)
    apologised = sum(1 for p in posts.values() if p and p[0].body.get("text") == APOLOGY)
    latencies = [posts[d.n][0].at - d.sent_at for d in deliveries if posts[d.n]]
    retried = sum(1 for d in deliveries if len(d.attempts) > 1)
    last_post = max((p[0].at for p in posts.values() if p), default=started)
    elapsed = last_post - started

    print()
    print(f"questions        {args.questions} sent ({retried} needed a Slack retry) in {send_seconds:.1f} s")
    print(f"answered once    {once}   duplicated {twice}   lost {lost}   apologised {apologised}")
    if latencies:
        print(f"latency (s)      p50 {statistics.median(latencies):.2f}   p90 {percentile(latencies, 90):.2f}   "
              f"p99 {percentile(latencies, 99):.2f}   max {max(latencies):.2f}   (event sent -> answer posted)")
        print(f"throughput       {once / elapsed:.1f} answers/s over {elapsed:.1f} s "
              f"(offered {args.rate:g}/s; capacity ~{args.workers * args.concurrency / args.llm_seconds:.0f}/s by LLM slots)")
    for name, mb in memory.items():
        print(f"peak memory      {name:<8} {mb:.0f} MB" if mb is not None else f"peak memory      {name:<8} n/a")
    if args.keep:
        print(f"logs in {root / 'logs'}")
    else:
        shutil.rmtree(root, ignore_errors=True)

    misses = []
    if once != args.questions:
        misses.append(f"{args.questions - once} questions not answered exactly once")
    if latencies and percentile(latencies, 99) > GOAL_P99_S:
        misses.append(f"p99 above {GOAL_P99_S:g} s")
    if (memory.get("web") or 0) > GOAL_WEB_MB:
        misses.append(f"web above {GOAL_WEB_MB:g} MB")
    misses += [f"{n} above {GOAL_WORKER_MB:g} MB" for n, mb in memory.items() if n != "web" and (mb or 0) > GOAL_WORKER_MB]
    print("goal: met" if not misses else "goal: MISSED: " + "; ".join(misses))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
