"""Scaling of the Ray engine: the same run on 1 and on 2 worker processes.

A fake OpenAI-compatible server (``assay.testing.FakeOpenAIServer``) runs in its own
process with a fixed latency per call and deterministic answers. The run is
``faithfulness`` (two calls a sample) over synthetic samples, with a fixed concurrency
per worker; only the number of workers changes::

    python benchmarks/scale.py [--samples 2000] [--latency 0.2] [--per-worker 16]

Prints, per worker count: wall time, samples/s, the ideal time
``samples x 2 x latency / (workers x per-worker)``, the cluster-wide grants of the
``GlobalLimiter`` and the mean time a worker spent awaiting one (its per-call overhead);
then the scaling ratio throughput(2) / throughput(1) against the ideal 2.0.
Needs ``pip install 'assay[ray,openai]'``; starts (and stops) a local Ray with 2 CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CONTEXT = "The sky is blue. Grass is green. Snow is white. Coal is black."
CLAIMS = ["The sky is blue.", "Grass is green.", "Snow is red.", "Coal is black.", "The sea is purple."]


def responder(body: dict[str, Any]) -> str:
    """Statements are the known claims in the answer; supported iff in the context."""
    user = body["messages"][1]["content"]
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [c for c in CLAIMS if c in answer]})
    statements = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    items = [s.split("] ", 1)[1] for s in statements]
    return json.dumps({"verdicts": [{"statement": t, "reason": "ok", "verdict": int(t in CONTEXT)} for t in items]})


def serve(latency: float) -> None:
    """Child process: serve until stdin closes; print the base URL first."""
    from assay.testing import FakeOpenAIServer

    with FakeOpenAIServer(responder, latency_s=latency) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def samples(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        claims = [CLAIMS[(i + k) % len(CLAIMS)] for k in range(1 + i % 3)]
        rows.append({"id": f"s{i}", "question": f"Sample {i}?", "answer": " ".join(claims), "contexts": [CONTEXT]})
    return rows


def run(base_url: str, n: int, workers: int, per_worker: int, rpm: float | None = None) -> tuple[float, Any]:
    from assay.metrics import build_metric
    from assay.run import Limits
    from assay.run._ray import RayRunStats, aevaluate_ray

    stats = RayRunStats()
    started = time.perf_counter()
    result = asyncio.run(
        aevaluate_ray(
            samples(n),
            [build_metric("faithfulness", {"strategy": "batch"})],
            "openai:fake-judge",
            base_url=base_url,
            limits=Limits(timeout_s=30, rpm=rpm),
            workers=workers,
            per_worker_concurrency=per_worker,
            keep_results=False,
            stats=stats,
        )
    )
    elapsed = time.perf_counter() - started
    summary = result.summary()["faithfulness"]
    assert summary.n_scored == n, summary
    return elapsed, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--per-worker", type=int, default=16)
    parser.add_argument("--rpm", type=float, default=None, help="a global RPM budget (1e9: the limiter, unbound)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return

    import ray

    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", "--latency", str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    base_url = server.stdout.readline().strip()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a throwaway single-machine cluster
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        run(base_url, 50, 2, args.per_worker, args.rpm)  # warm-up: worker processes, imports, connections
        throughput = {}
        budget = f"global RPM budget {args.rpm:g}" if args.rpm else "no global budget (limiter actor skipped)"
        print(
            f"{args.samples} samples x 2 calls, {args.latency * 1000:.0f} ms a call, "
            f"{args.per_worker} per worker, {budget}"
        )
        for workers in (1, 2):
            elapsed, stats = run(base_url, args.samples, workers, args.per_worker, args.rpm)
            ideal = args.samples * 2 * args.latency / (workers * args.per_worker)
            throughput[workers] = args.samples / elapsed
            print(
                f"workers={workers}: {elapsed:6.1f} s, {throughput[workers]:6.1f} samples/s "
                f"(ideal {ideal:.1f} s, {args.samples / ideal:.1f} samples/s); limiter grants "
                f"{stats.limiter_acquires}, {stats.acquire_ms_mean:.2f} ms per grant awaited"
            )
        print(f"scaling 1 -> 2 workers: {throughput[2] / throughput[1]:.2f}x (ideal 2.00x)")
    finally:
        ray.shutdown()
        server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
