"""Throughput of faithfulness against a judge with fixed latency, and memory when streaming.

A fake OpenAI-compatible server (``assay.testing.FakeOpenAIServer``) runs in a separate
process with a fixed latency per call and deterministic answers; both assay and Ragas
talk to it over loopback HTTP, on the same seeded synthetic RAG samples::

    python benchmarks/throughput.py [--samples 500] [--latency 0.2] [--concurrency 32]
        [--skip-ragas] [--setup-ragas] [--stream-samples 100000]

Figures:

* assay, ``Faithfulness(strategy="batch")``: wall time against the ideal ``calls made x
  latency / concurrency`` (target ratio <= 1.10), the calls counted by the server (a
  sample of one-sentence statements makes one call, not the two a split needs: an ideal
  that assumed two per sample passed a run 1.2x its true ideal);
* Ragas' ``Faithfulness`` (collections API, ``llm_factory`` over ``AsyncOpenAI``) on the
  same samples at the same concurrency, run by ``benchmarks/ragas_faithfulness.py`` inside
  its own virtual environment (``/tmp/ragas-venv``; ``--setup-ragas`` creates it);
  calls and tokens are counted by the server, the same way for both tools;
* a cached re-run (``JudgeCache``): zero calls and < 5 % of the run that filled it, each
  run in a new process as a user's ``assay run`` is (a second run in one process finds
  the first's sentences and compiled patterns in memory, and took half the time);
* client CPU (the running process's user + system time, ``time.process_time``) per sample, for
  the judged run and the cached re-run, and the re-run's share of the filling run's CPU:
  unlike wall time, it does not grow when other processes load the machine. The CPU
  model and the load average before and after are printed beside the figures;
* peak RSS of a child process streaming ``--stream-samples`` generated samples through
  ``aevaluate(..., keep_results=False)`` with an instant ``FunctionJudge`` (< 500 MB).

Any figure that MISSes its target makes the script exit 1 (0 when every target is met):
a run that printed MISS is not a passing benchmark in CI or a script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from _lib.synthetic import SEED, _block, _numbered, _supported, iter_samples, responder, sentences, to_sample
from _lib.timing import exit_code

HERE = Path(__file__).resolve().parent
RAGAS_VENV = Path("/tmp/ragas-venv")
RAGAS_PYTHON = RAGAS_VENV / "bin" / "python"
# Ragas 0.4.3 imports langchain_community.chat_models.vertexai, removed in langchain-community 0.4.
RAGAS_REQUIREMENTS = ("ragas==0.4.3", "langchain-community<0.4")


# -- the fake server's answers -----------------------------------------------------------


def _message_chars(messages: object) -> int:
    # The same count FakeOpenAIServer uses for its usage figures (4 characters a token).
    if not isinstance(messages, list):
        return 0
    total = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return total


def serve(latency_s: float, log_path: str | None) -> None:
    """Run the fake server until stdin closes; ``stats`` / ``reset`` lines print counters as JSON.

    Counters: ``calls`` (requests answered), ``prompt_tokens`` and ``completion_tokens``
    (the figures the server reports in each response's ``usage``), and ``cpu_s`` (the
    server process's CPU time).
    """
    from assay.testing import FakeOpenAIServer

    lock = threading.Lock()
    counters = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    log: IO[str] | None = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115

    def counted(body: dict[str, Any]) -> str:
        content = responder(body)
        with lock:
            counters["calls"] += 1
            counters["prompt_tokens"] += _message_chars(body.get("messages")) // 4 + 1
            counters["completion_tokens"] += len(content) // 4 + 1
            if log is not None and counters["calls"] <= 4:
                log.write(json.dumps({"request": body, "answer": content}) + "\n")
                log.flush()
        return content

    with FakeOpenAIServer(counted, latency_s=latency_s, model="fake") as server:
        print(json.dumps({"base_url": server.base_url}), flush=True)
        cpu_since = time.process_time()
        for line in sys.stdin:
            command = line.strip()
            with lock:
                print(json.dumps({**counters, "cpu_s": time.process_time() - cpu_since}), flush=True)
                if command == "reset":
                    counters.update(dict.fromkeys(counters, 0))
                    cpu_since = time.process_time()
    if log is not None:
        log.close()


class ServerProcess:
    """The fake server in a child process (its threads do not compete for our GIL)."""

    def __init__(self, latency_s: float, log_path: str | None = None) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--latency", str(latency_s)]
        if log_path:
            command += ["--log-requests", log_path]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.base_url: str = json.loads(self._proc.stdout.readline())["base_url"]

    def _ask(self, command: str) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        counters: dict[str, Any] = json.loads(self._proc.stdout.readline())
        return counters

    def reset(self) -> dict[str, Any]:
        """The counters since the last reset; then zero them."""
        return self._ask("reset")

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- assay runs --------------------------------------------------------------------------


def run_assay(samples: Sequence[Any], base_url: str, concurrency: int, cache: Any = None) -> dict[str, Any]:
    """One ``evaluate`` of batch faithfulness: wall and CPU time, calls and tokens from the scores."""
    from assay import Faithfulness, evaluate
    from assay.models import OpenAIJudge
    from assay.run import Limits

    judge = OpenAIJudge("fake", base_url=base_url, max_concurrency=concurrency)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = evaluate(
        samples, [Faithfulness(strategy="batch")], judge, limits=Limits(concurrency=concurrency), cache=cache
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    scores = result.scores("faithfulness")
    calls = [c for s in scores for c in s.all_calls]
    usage = result.usage()
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "n": len(scores),
        "scored": sum(s.is_scored for s in scores),
        "calls": sum(not c.cached for c in calls),
        "cached_calls": sum(c.cached for c in calls),
        "tokens": usage.total_tokens,
        "mean": result.summary()["faithfulness"].mean,
    }


def assay_child(n: int, base_url: str, concurrency: int, cache_path: str) -> None:
    """One ``run_assay`` of the first ``n`` samples with a ``JudgeCache`` at ``cache_path``; its figures as JSON."""
    from assay.run import JudgeCache

    samples = [to_sample(r) for r in iter_samples(n)]
    cache = JudgeCache(Path(cache_path))
    try:
        print(json.dumps(run_assay(samples, base_url, concurrency, cache=cache)))
    finally:
        cache.close()


def run_assay_process(n: int, base_url: str, concurrency: int, cache_path: Path) -> dict[str, Any]:
    """``run_assay`` in a process of its own, as a user's ``assay run`` is: nothing read before is in memory.

    In one process, a second run finds every answer's sentences, terms and the detector's
    compiled patterns where the first left them (``lru_cache``, lazily compiled
    lexicons); a user's re-run starts a new process and pays for them again. The timing
    covers ``evaluate`` alone, as in the judged run (not the interpreter's start or imports).
    """
    command = [sys.executable, str(Path(__file__).resolve()), "--assay-child", str(cache_path)]
    command += ["--base-url", base_url, "--samples", str(n), "--concurrency", str(concurrency)]
    return child_report(command, "the assay run's process")


def child_report(command: Sequence[str], what: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON object a child process prints last; its exit code and stderr's end if it failed."""
    done = subprocess.run(list(command), capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


# -- Ragas -------------------------------------------------------------------------------


def setup_ragas() -> None:
    """Create ``/tmp/ragas-venv`` and install Ragas there (never into this environment)."""
    if not RAGAS_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(RAGAS_VENV)], check=True)
    pip = [str(RAGAS_PYTHON), "-m", "pip", "install", "-q"]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([*pip, "--dry-run", "--report", str(report), *RAGAS_REQUIREMENTS], check=True)
        planned = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    if "torch" in planned:
        raise SystemExit(f"installing {RAGAS_REQUIREMENTS} would pull torch; not installing")
    subprocess.run([*pip, *RAGAS_REQUIREMENTS], check=True)


def run_ragas(samples_path: Path, base_url: str, concurrency: int, api: str) -> dict[str, Any]:
    script = HERE / "ragas_faithfulness.py"
    command = [str(RAGAS_PYTHON), str(script), str(samples_path), "--base-url", base_url]
    command += ["--concurrency", str(concurrency), "--api", api]
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", "OPENAI_API_KEY": "not-needed"}
    return child_report(command, "ragas_faithfulness.py", env)


# -- peak RSS while streaming ------------------------------------------------------------


def _instant_answer(messages: Sequence[Any], request: Any) -> str:
    user = messages[1]["content"]
    if request.schema is not None and request.schema.__name__ == "Statements":
        return json.dumps({"statements": sentences(_block(user, "answer"))})
    context = "\n".join(_numbered(_block(user, "context")))
    items = [
        {"statement": s, "reason": "checked", "verdict": _supported(s, context)}
        for s in _numbered(_block(user, "statements"))
    ]
    return json.dumps({"verdicts": items})


def _peak_kib() -> int:
    """This process's peak RSS in KiB.

    ``ru_maxrss`` survives ``execve`` on Linux: a child forked from a large parent starts
    with the parent's high-water mark. ``VmHWM`` belongs to the new address space, so it is
    used where ``/proc`` has it.
    """
    status = Path("/proc/self/status")
    found = re.search(r"VmHWM:\s+(\d+) kB", status.read_text()) if status.exists() else None
    return int(found.group(1)) if found else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def stream_child(n: int, concurrency: int, keep_requests: bool) -> None:
    """Stream ``n`` lazily generated samples; print peak RSS (MB), RSS at the end and wall time as JSON."""
    from assay import Faithfulness, aevaluate
    from assay.models import FunctionJudge
    from assay.run import Limits

    judge: FunctionJudge

    def answer(messages: Sequence[Any], request: Any) -> str:
        if not keep_requests:
            judge.requests.clear()  # FunctionJudge records every request: unbounded on a stream
        return _instant_answer(messages, request)

    judge = FunctionJudge(answer, name="instant", concurrency=concurrency, per_statement=False)
    baseline_kib = _peak_kib()
    start = time.perf_counter()
    result = asyncio.run(
        aevaluate(
            (to_sample(r) for r in iter_samples(n, seed=SEED + 1)),
            [Faithfulness(strategy="batch")],
            judge,
            limits=Limits(concurrency=concurrency),
            keep_results=False,
        )
    )
    wall = time.perf_counter() - start
    peak_kib = _peak_kib()
    status = Path("/proc/self/status")
    rss = re.search(r"VmRSS:\s+(\d+) kB", status.read_text()) if status.exists() else None
    summary = result.summary()["faithfulness"]
    print(
        json.dumps(
            {
                "n": result.n_samples,
                "scored": summary.n_scored,
                "wall_s": wall,
                "baseline_mb": baseline_kib / 1024,
                "peak_mb": peak_kib / 1024,
                "end_mb": int(rss.group(1)) / 1024 if rss else None,
            }
        )
    )


def run_stream(n: int, concurrency: int, keep_requests: bool = False) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--stream-child", str(n)]
    command += ["--concurrency", str(concurrency)]
    if keep_requests:
        command.append("--keep-requests")
    return child_report(command, "streaming child")


# -- main --------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), and its family where the name hides the generation."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    name = re.search(r"^model name\s*:\s*(.+)$", info, re.MULTILINE)
    family = re.search(r"^cpu family\s*:\s*(\d+)$", info, re.MULTILINE)
    text = name.group(1).strip() if name else "unknown CPU"
    return f"{text} (family {family.group(1)})" if family else text


def load_text() -> str:
    """The 1-minute load average beside the core count."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count() or 1} cores"


def ms_per_sample(run: dict[str, Any]) -> str:
    """A run's client CPU per sample, in milliseconds."""
    return f"{run['cpu_s'] / max(1, run['n']) * 1000:.2f} ms"


def _row(name: str, value: str, target: str = "", ok: bool | None = None) -> str:
    verdict = "" if ok is None else ("PASS" if ok else "MISS")
    return f"{name:<38} {value:>24}  {target:<22} {verdict}"


def ideal_seconds(calls: int, latency_s: float, concurrency: int) -> float:
    """The shortest wall time for ``calls`` calls of ``latency_s`` each, ``concurrency`` at a time."""
    return calls * latency_s / concurrency


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call at the fake server")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--skip-ragas", action="store_true")
    parser.add_argument(
        "--ragas-api",
        choices=("collections", "evaluate"),
        default="collections",
        help="Ragas' metric.ascore API (default) or ragas.evaluate with RunConfig(max_workers)",
    )
    parser.add_argument("--setup-ragas", action="store_true", help=f"create {RAGAS_VENV} with Ragas first")
    parser.add_argument("--stream-samples", type=int, default=100_000, help="0 skips the RSS measurement")
    parser.add_argument("--log-requests", help="append the server's first requests and answers to this file")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stream-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--keep-requests", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--assay-child", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.serve:
        serve(args.latency, args.log_requests)
        return 0
    if args.stream_child is not None:
        stream_child(args.stream_child, args.concurrency, args.keep_requests)
        return 0
    if args.assay_child is not None:
        assay_child(args.samples, args.base_url, args.concurrency, args.assay_child)
        return 0
    if args.setup_ragas:
        setup_ragas()

    records = list(iter_samples(args.samples))
    samples = [to_sample(r) for r in records]
    rows: list[str] = []
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > cores / 2:
        print(f"warning: load average {load:.1f} on {cores} cores: other processes compete; wall times suffer")
    print(f"{args.samples} samples, {args.latency * 1000:g} ms a call, concurrency {args.concurrency}", flush=True)
    load_before = load_text()
    print(f"{cpu_model()}; {load_before}", flush=True)

    with ServerProcess(args.latency, args.log_requests) as server, tempfile.TemporaryDirectory() as tmp:
        ours = run_assay(samples, server.base_url, args.concurrency)
        ours_server = server.reset()
        # The ideal of the calls this run made (counted by the server), not of an assumed count a sample.
        ideal = ideal_seconds(ours_server["calls"], args.latency, args.concurrency)
        ratio = ours["wall_s"] / ideal if ideal else float("inf")
        print(f"assay: {ours}  server: {ours_server}", flush=True)
        rows.append(_row("assay wall", f"{ours['wall_s']:.2f}s"))
        per_sample = ours_server["calls"] / max(1, args.samples)
        rows.append(_row("assay ideal", f"{ideal:.2f}s ({per_sample:.2f} calls/sample)"))
        rows.append(_row("assay wall / ideal", f"{ratio:.3f}", "<= 1.10", ratio <= 1.10))
        rows.append(_row("assay calls (scores / server)", f"{ours['calls']} / {ours_server['calls']}"))
        tokens = f"{ours['tokens']:,} / {ours_server['prompt_tokens'] + ours_server['completion_tokens']:,}"
        rows.append(_row("assay tokens (scores / server)", tokens))
        rows.append(_row("assay scored", f"{ours['scored']} of {ours['n']}"))
        rows.append(_row("assay CPU: client / server", f"{ours['cpu_s']:.2f}s / {ours_server['cpu_s']:.2f}s"))
        rows.append(_row("assay client CPU / sample", ms_per_sample(ours)))

        if args.skip_ragas:
            rows.append(_row("ragas", "skipped (--skip-ragas)"))
        elif not RAGAS_PYTHON.exists():
            rows.append(_row("ragas", f"skipped: no {RAGAS_PYTHON}", "--setup-ragas"))
        else:
            samples_path = Path(tmp) / "samples.jsonl"
            with samples_path.open("w", encoding="utf-8") as out:
                for r in records:
                    row = {"user_input": r["question"], "response": r["answer"], "retrieved_contexts": r["contexts"]}
                    out.write(json.dumps(row) + "\n")
            ragas = run_ragas(samples_path, server.base_url, args.concurrency, args.ragas_api)
            ragas_server = server.reset()
            print(f"ragas: {ragas}  server: {ragas_server}", flush=True)
            ragas_tokens = ragas_server["prompt_tokens"] + ragas_server["completion_tokens"]
            ours_tokens = ours_server["prompt_tokens"] + ours_server["completion_tokens"]
            rows.append(_row(f"ragas wall ({ragas['api']})", f"{ragas['wall_s']:.2f}s"))
            rows.append(_row("ragas wall / ideal", f"{ragas['wall_s'] / ideal:.3f}"))
            rows.append(_row("ragas wall / assay wall", f"{ragas['wall_s'] / ours['wall_s']:.3f}"))
            rows.append(_row("ragas calls (server)", f"{ragas_server['calls']}"))
            rows.append(_row("ragas tokens (server)", f"{ragas_tokens:,}"))
            rows.append(_row("ragas tokens / assay tokens", f"{ragas_tokens / ours_tokens:.3f}"))
            rows.append(_row("ragas scored / NaN", f"{ragas['n_scored']} / {ragas['n_nan']}"))
            rows.append(_row("ragas CPU: client / server", f"{ragas['cpu_s']:.2f}s / {ragas_server['cpu_s']:.2f}s"))

        cache_path = Path(tmp) / "cache.sqlite"
        filled = run_assay_process(args.samples, server.base_url, args.concurrency, cache_path)
        fill_server = server.reset()
        again = run_assay_process(args.samples, server.base_url, args.concurrency, cache_path)
        again_server = server.reset()
        share = again["wall_s"] / filled["wall_s"]
        cpu_share = again["cpu_s"] / filled["cpu_s"] if filled["cpu_s"] else float("inf")
        print(f"cache fill: {filled} server: {fill_server}; re-run: {again} server: {again_server}", flush=True)
        rows.append(
            _row("cache-filling run wall (a new process)", f"{filled['wall_s']:.2f}s ({fill_server['calls']} calls)")
        )
        rows.append(_row("cached re-run calls (server)", f"{again_server['calls']}", "0", again_server["calls"] == 0))
        rows.append(_row("cached re-run wall (a new process)", f"{again['wall_s']:.3f}s"))
        rows.append(_row("cached re-run / filling run", f"{share:.2%}", "< 5%", share < 0.05))
        rows.append(_row("cache-filling run client CPU / sample", ms_per_sample(filled)))
        rows.append(_row("cached re-run client CPU / sample", ms_per_sample(again)))
        rows.append(_row("cached re-run CPU / filling run CPU", f"{cpu_share:.2%}"))

    if args.stream_samples > 0:
        stream = run_stream(args.stream_samples, args.concurrency)
        print(f"stream: {stream}", flush=True)
        rows.append(_row(f"stream {stream['n']:,} samples wall", f"{stream['wall_s']:.1f}s"))
        rows.append(_row("stream peak RSS after imports", f"{stream['baseline_mb']:.0f} MB"))
        if stream["end_mb"] is not None:
            rows.append(_row("stream RSS at the end", f"{stream['end_mb']:.0f} MB"))
        rows.append(_row("stream peak RSS", f"{stream['peak_mb']:.0f} MB", "< 500 MB", stream["peak_mb"] < 500))

    print()
    print(f"{cpu_model()}; {load_before} at the start, {load_text()} at the end")
    print(_row("figure", "value", "target", None) + "PASS/MISS")
    print("-" * 96)
    print("\n".join(rows))
    return exit_code(rows)


if __name__ == "__main__":
    sys.exit(main())
