"""Faults must not collapse throughput: the same run fault-free and at 30 % mixed faults.

A fake OpenAI-compatible server (``assay.testing.FakeOpenAIServer``) runs in a child
process with a fixed latency per call and the deterministic faithfulness answers of
``benchmarks/throughput.py``. assay runs ``Faithfulness(strategy="batch")`` with
``OpenAIJudge`` on the same seeded samples twice: against a clean server, then against
one that injects faults into 30 % of requests, split evenly over ``429`` (with
``Retry-After: 0.05``), ``500``, ``503``, ``timeout`` (a hang, bounded by ``--timeout``),
``reset``, ``malformed``, ``refusal``, ``truncated`` and ``wrong_count``::

    python benchmarks/faults.py [--samples 2000] [--latency 0.1] [--concurrency 32]
        [--fault-rate 0.30] [--timeout 1.0]

Figures: both wall times and their ratio (target <= 3); judge calls (the scores' call
records; a retried call is one record) and requests (the server's count: every attempt);
retries; re-asks; unscored samples by reason; and made-up values: samples scored in both
runs whose value or verdicts differ from the fault-free run's (must be 0). Exits 1 when a
value was made up or the fault-free run left a sample unscored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _lib.synthetic import iter_samples, responder, to_sample
from _lib.timing import exit_code

FAULT_KINDS = ("429", "500", "503", "timeout", "reset", "malformed", "refusal", "truncated", "wrong_count")


def serve(latency_s: float, fault_rate: float, hang_s: float, seed: int) -> None:
    """Child process: serve until stdin closes; each ``stats`` line prints the counters as JSON."""
    from assay.testing import FakeOpenAIServer

    faults = {kind: fault_rate / len(FAULT_KINDS) for kind in FAULT_KINDS} if fault_rate > 0 else None
    lock = threading.Lock()
    answered = {"answers": 0}

    def counted(body: dict[str, Any]) -> str:
        with lock:
            answered["answers"] += 1
        return responder(body)

    server = FakeOpenAIServer(counted, latency_s=latency_s, faults=faults, seed=seed, timeout_sleep_s=hang_s)
    with server:
        print(json.dumps({"base_url": server.base_url}), flush=True)
        for _ in sys.stdin:
            with lock:
                stats = {"calls": server.calls, "answers": answered["answers"], "faults": server.fault_counts}
            print(json.dumps(stats), flush=True)


class ServerProcess:
    """The fake server in a child process (its threads do not compete for our GIL)."""

    def __init__(self, latency_s: float, fault_rate: float, hang_s: float, seed: int) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--latency", str(latency_s)]
        command += ["--fault-rate", str(fault_rate), "--hang", str(hang_s), "--seed", str(seed)]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.base_url: str = json.loads(self._proc.stdout.readline())["base_url"]

    def stats(self) -> dict[str, Any]:
        """Requests received, answers computed and faults injected so far."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write("stats\n")
        self._proc.stdin.flush()
        stats: dict[str, Any] = json.loads(self._proc.stdout.readline())
        return stats

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def run(samples: Sequence[Any], base_url: str, concurrency: int, timeout_s: float) -> dict[str, Any]:
    """One ``evaluate`` of batch faithfulness; wall time, calls, retries and per-sample outcomes."""
    from assay import Faithfulness, evaluate
    from assay.models import OpenAIJudge
    from assay.run import Limits

    # The client's own timeout is a backstop only: the runner's per-attempt timeout bounds hangs.
    judge = OpenAIJudge("fake", base_url=base_url, max_concurrency=concurrency, timeout=timeout_s + 30)
    limits = Limits(concurrency=concurrency, timeout_s=timeout_s)
    start = time.perf_counter()
    result = evaluate(samples, [Faithfulness(strategy="batch")], judge, limits=limits)
    wall = time.perf_counter() - start
    scores = {r.sample.id: r.scores["faithfulness"] for r in result.results}
    calls = [c for s in scores.values() for c in s.all_calls]
    return {
        "wall_s": wall,
        "n": len(scores),
        "scored": sum(s.is_scored for s in scores.values()),
        "calls": len(calls),
        "attempts": sum(c.attempts for c in calls),
        "retries": sum(c.attempts - 1 for c in calls),
        "reasks": sum(c.purpose.endswith(".reask") for c in calls),
        "unscored": dict(
            sorted(Counter(s.unscored_reason.value for s in scores.values() if s.unscored_reason).items())
        ),
        "outcomes": {key: (s.value, tuple(v.value for v in s.verdicts)) for key, s in scores.items() if s.is_scored},
    }


def _row(name: str, value: str, target: str = "", ok: bool | None = None) -> str:
    verdict = "" if ok is None else ("PASS" if ok else "MISS")
    return f"{name:<34} {value:>34}  {target:<8} {verdict}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per call at the fake server")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--fault-rate", type=float, default=0.30, help="share of requests that get a fault")
    parser.add_argument("--timeout", type=float, default=1.0, help="per-attempt timeout: bounds a hang")
    parser.add_argument("--seed", type=int, default=1, help="seed of the server's fault draws")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hang", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency, args.fault_rate, args.hang, args.seed)
        return 0

    samples = [to_sample(r) for r in iter_samples(args.samples)]
    hang_s = args.timeout + 10.0  # a hang outlasts the per-attempt timeout
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    print(
        f"{args.samples} samples, {args.latency * 1000:g} ms a call, concurrency {args.concurrency}, "
        f"timeout {args.timeout:g}s; load average {load:.1f} on {cores} cores",
        flush=True,
    )
    if load > cores / 2:
        print("warning: other processes compete for the CPU; wall times suffer")

    with ServerProcess(args.latency, 0.0, hang_s, args.seed) as server:
        clean = run(samples, server.base_url, args.concurrency, args.timeout)
        clean_server = server.stats()
    print(f"fault-free: {_brief(clean)}  server: {clean_server}", flush=True)
    with ServerProcess(args.latency, args.fault_rate, hang_s, args.seed) as server:
        faulty = run(samples, server.base_url, args.concurrency, args.timeout)
        faulty_server = server.stats()
    print(f"faults: {_brief(faulty)}  server: {faulty_server}", flush=True)

    both = clean["outcomes"].keys() & faulty["outcomes"].keys()
    made_up = sorted(k for k in both if clean["outcomes"][k] != faulty["outcomes"][k])
    ratio = faulty["wall_s"] / clean["wall_s"]
    injected = sum(faulty_server["faults"].values())
    rows = [
        _row("fault-free wall", f"{clean['wall_s']:.2f}s"),
        _row(f"{args.fault_rate:.0%} faults wall", f"{faulty['wall_s']:.2f}s"),
        _row("ratio", f"{ratio:.2f}x", "<= 3", ratio <= 3),
        _row("judge calls fault-free (requests)", f"{clean['calls']} ({clean_server['calls']})"),
        _row("judge calls with faults (requests)", f"{faulty['calls']} ({faulty_server['calls']})"),
        _row("faults injected", f"{injected} ({injected / max(1, faulty_server['calls']):.1%} of requests)"),
        _row("retries (transport faults)", f"{faulty['retries']}"),
        _row("re-asks (invalid answers)", f"{faulty['reasks']}"),
        _row("scored fault-free", f"{clean['scored']} of {clean['n']}", f"{clean['n']}", clean["scored"] == clean["n"]),
        _row("scored with faults", f"{faulty['scored']} of {faulty['n']}"),
        *(_row(f"  unscored: {reason}", str(count)) for reason, count in faulty["unscored"].items()),
        _row("made-up values", f"{len(made_up)} of {len(both)} scored in both", "0", not made_up),
    ]
    print("\n".join(rows))
    if made_up:
        print(f"differing samples: {made_up[:20]}")
    return exit_code(rows)  # made-up values, scored fault-free and the wall ratio: any MISS fails


def _brief(report: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in report.items() if k != "outcomes"}


if __name__ == "__main__":
    raise SystemExit(main())
