"""The Ray engine on a real two-node local cluster: same results as the local engine, nothing lost.

The cluster is a head and one worker node, each a ``ray start`` on 127.0.0.1 with one CPU,
in a temp dir of their own; the module's finalizer kills exactly those processes (their
process groups, then anything still naming the temp dir), never other Ray processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from assay import Sample
from assay.metrics._registry import build_metric
from assay.models import ChatMessage
from assay.models._testing import FunctionJudge, JudgeRequest
from assay.run import Limits, RunStore, SampleResult, aevaluate
from assay.testing import FakeOpenAIServer

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")]

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
CONTEXT = "The sky is blue. Grass is green. Snow is white. Coal is black."
CLAIMS = ["The sky is blue.", "Grass is green.", "Snow is red.", "Coal is black.", "The sea is purple."]
SAMPLE_OF = re.compile(r"Sample (\d+)[?.]")
WHOLE_ANSWER = {"decomposer": "llm"}  # two calls a sample: the answer's statements, then their verdicts


def make_samples(n: int) -> list[Sample]:
    samples = []
    for i in range(n):
        claims = [CLAIMS[(i + k) % len(CLAIMS)] for k in range(1 + i % 3)]
        samples.append(Sample(id=f"s{i}", question=f"Sample {i}?", answer=" ".join(claims), contexts=(CONTEXT,)))
    return samples


def expected_value(sample: Sample) -> float:
    claims = [c for c in CLAIMS if c in (sample.answer or "")]
    return sum(c in CONTEXT for c in claims) / len(claims)


def answer_for(user: str) -> str:
    """A deterministic judge: statements are the known claims; supported iff in the context."""
    if "<sentence>\n" in user:
        sentence = user.split("<sentence>\n")[1].split("\n</sentence>")[0]
        return json.dumps({"statements": [c for c in CLAIMS if c in sentence]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [c for c in CLAIMS if c in answer]})
    statements = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    items = [s.split("] ", 1)[1] for s in statements]
    return json.dumps(
        {"verdicts": [{"statement": t, "reason": "checked", "verdict": int(t in CONTEXT)} for t in items]}
    )


def responder(body: dict[str, Any]) -> str:
    return answer_for(body["messages"][1]["content"])


def _function_answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
    return answer_for(messages[1]["content"])


def scripted_judge() -> FunctionJudge:
    """The picklable judge factory workers call (this module is on the nodes' PYTHONPATH)."""
    return FunctionJudge(_function_answer, name="scripted", concurrency=8, per_statement=False)


# -- the cluster --------------------------------------------------------------------------------


def _head_address(temp_dir: str) -> str:
    """The head's GCS address on loopback, from the file ``ray start --head --port=0`` writes in its temp dir.

    The port is the one the head bound itself: a port probed free here and bound later by
    Ray could be taken in between by another test's server.
    """
    written = (Path(temp_dir) / "ray_current_cluster").read_text().strip()
    return f"127.0.0.1:{written.rsplit(':', 1)[1]}"


def _ray_cli() -> str:
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if found is None:
        pytest.skip("the 'ray' command is not installed")
    return found


def _processes_naming(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head and a worker node on 127.0.0.1 (1 CPU each); yields the GCS address."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("openai")
    cli = _ray_cli()
    temp_dir = tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp")  # short: Ray's socket paths are limited
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "OPENAI", "ASSAY"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(HERE), str(SRC), env.get("PYTHONPATH", "")]),
        RAY_USAGE_STATS_ENABLED="0",
        RAY_AUTH_MODE="disabled",  # loopback only; otherwise a token in ~/.ray may be half-applied
    )
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    groups: list[int] = []
    auth_mode = os.environ.get("RAY_AUTH_MODE")

    def start(*args: str) -> None:
        proc = subprocess.Popen(
            [cli, "start", *args, *common],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its daemons stay in this group: the finalizer kills only them
        )
        groups.append(proc.pid)
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start failed:\n{out}")

    try:
        start("--head", "--port=0", "--include-dashboard=false", f"--temp-dir={temp_dir}")
        address = _head_address(temp_dir)
        start(f"--address={address}")
        os.environ["RAY_AUTH_MODE"] = "disabled"
        ray.init(address=address, log_to_driver=False)
        deadline = time.monotonic() + 60
        while sum(n["Alive"] for n in ray.nodes()) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError("the worker node never joined")
            time.sleep(0.2)
        yield address
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        if auth_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth_mode
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        for pid in _processes_naming(temp_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _by_id(results: Sequence[SampleResult]) -> dict[str, tuple[float, list[Any]]]:
    return {
        r.sample.id: (r.scores["faithfulness"].value, [v.value for v in r.scores["faithfulness"].verdicts])
        for r in results
    }


LIMITS = Limits(timeout_s=10, max_attempts=4, backoff_s=0.02)


def on_ray(
    samples: Sequence[Sample], server: FakeOpenAIServer, judge: Any = "openai:fake-judge", **options: Any
) -> Any:
    """``aevaluate_ray`` of whole-answer faithfulness against ``server``: two workers of four slots, ``LIMITS``."""
    from assay.run._ray import aevaluate_ray

    options = {"limits": LIMITS, "workers": 2, "per_worker_concurrency": 4, **options}
    metric = build_metric("faithfulness", WHOLE_ANSWER)
    return asyncio.run(aevaluate_ray(samples, [metric], judge, base_url=server.base_url, **options))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["function", "openai"])
def test_ray_engine_matches_the_local_engine_on_200_samples(cluster: str, kind: str) -> None:
    from assay.run._ray import RayRunStats

    samples = make_samples(200)
    metric = build_metric("faithfulness", WHOLE_ANSWER)
    with FakeOpenAIServer(responder) as server:
        if kind == "function":
            judge_ref: Any = scripted_judge
            local_judge: Any = scripted_judge()
        else:
            judge_ref = "openai:fake-judge"
            from assay.models import OpenAIJudge

            local_judge = OpenAIJudge("fake-judge", base_url=server.base_url)
        local = asyncio.run(aevaluate(samples, [metric], local_judge, limits=LIMITS, concurrency=8))
        calls_local = server.calls
        stats = RayRunStats()
        distributed = on_ray(samples, server, judge_ref, stats=stats)
        calls_ray = server.calls - calls_local
    assert distributed.n_samples == local.n_samples == 200
    assert _by_id(distributed.results) == _by_id(local.results)
    values = _by_id(distributed.results)
    for sample in samples:
        assert values[sample.id][0] == pytest.approx(expected_value(sample)), sample.id
    ray_summary, local_summary = distributed.summary()["faithfulness"], local.summary()["faithfulness"]
    assert ray_summary.mean == pytest.approx(local_summary.mean)  # summed in another order
    assert ray_summary.model_copy(update={"mean": 0.0}) == local_summary.model_copy(update={"mean": 0.0})
    assert stats.workers_started == 2 and stats.worker_deaths == 0
    assert stats.limiter_acquires == 0, "no global budget: the limiter actor is skipped"
    if kind == "openai":
        assert calls_ray == calls_local == 400


@pytest.mark.slow
def test_ray_workers_read_back_the_scores_a_local_run_kept_and_keep_their_own(cluster: str, tmp_path: Path) -> None:
    from assay.models import OpenAIJudge
    from assay.run import JudgeCache

    samples = make_samples(40)
    metric = build_metric("faithfulness", WHOLE_ANSWER)
    cache_path = tmp_path / "cache.sqlite"
    with FakeOpenAIServer(responder) as server:
        judge = OpenAIJudge("fake-judge", base_url=server.base_url)
        # re-asks named: the suite's default (0, conftest) does not reach Ray's workers (1)
        local = asyncio.run(aevaluate(samples[:20], [metric], judge, limits=LIMITS, cache=cache_path, reasks=1))
        calls = server.calls

        first = on_ray(samples, server, cache_path=cache_path, reasks=1)
        made = server.calls - calls
        again = on_ray(samples, server, cache_path=cache_path, reasks=1)
        assert server.calls - calls == made, "the workers' own scores were kept too: the re-run made no call"
    kept_ids = {s.id for s in samples[:20]}
    calls_of = {r.sample.id: r.scores["faithfulness"].all_calls for r in first.results}
    assert all(c.cached for i in kept_ids for c in calls_of[i]), "the local run's samples made no call"
    assert made == sum(not c.cached for c in calls_of.values() for c in c) > 0
    with JudgeCache(cache_path) as cache:
        # one score a sample: the workers keyed the local run's scores as it did (same code, same
        # question) and found them; a key of their own would have kept 20 more
        assert cache.info().scores == 40
    assert _by_id(again.results) == _by_id(first.results)
    assert {k: v for k, v in _by_id(first.results).items() if k in kept_ids} == _by_id(local.results)
    assert all(c.cached for r in again.results for c in r.scores["faithfulness"].all_calls)


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing_and_judges_nothing_twice(cluster: str, tmp_path: Path) -> None:
    import ray

    from assay.run import RunSpec
    from assay.run._ray import RayRunStats

    samples = make_samples(200)
    store = RunStore(tmp_path / "runs.sqlite")
    store.create(RunSpec(run_id="r1", judge="openai:fake-judge", judge_model="fake-judge", engine="ray"))
    committed: Counter[tuple[int, int]] = Counter()
    calls_at_commit: dict[str, int] = {}
    killed: dict[str, int] = {}
    enough = threading.Event()

    with FakeOpenAIServer(responder, latency_s=0.08) as server:

        def on_result(result: SampleResult) -> None:
            calls_at_commit[result.sample.id] = server.calls
            store.record("r1", result, repeat=result.repeat)
            committed[(result.line, result.repeat)] += 1
            if len(committed) >= 40:
                enough.set()

        def kill_a_worker() -> None:
            enough.wait(timeout=60)
            names = [n["name"] for n in ray.util.list_named_actors(all_namespaces=True)]
            name = next(n for n in names if re.fullmatch(r"assay-\w+-w1\.\d+", n))
            pid = ray.get(ray.get_actor(name).pid.remote())
            killed["pid"] = pid
            killed["at"] = len(committed)
            os.kill(pid, signal.SIGKILL)

        killer = threading.Thread(target=kill_a_worker)
        killer.start()
        stats = RayRunStats()
        result = on_ray(samples, server, on_result=on_result, stats=stats, keep_results=False)
        killer.join(timeout=30)
        requests = server.requests

    assert "pid" in killed and killed["at"] < 200, "the worker should have been killed mid-run"
    assert stats.worker_deaths == 1 and stats.redispatched >= 1 and stats.workers_started == 3
    assert result.n_samples == 200
    assert sorted(committed) == [(i, 0) for i in range(1, 201)], "every row committed"
    assert set(committed.values()) == {1}, "no row committed twice"
    records = list(store.records("r1"))
    assert len(records) == 200
    for record, sample in zip(records, samples, strict=True):
        assert record["id"] == sample.id
        assert record["scores"]["faithfulness"]["value"] == pytest.approx(expected_value(sample))
    # The server saw no request for a sample after that sample was committed. Only the first
    # call of a sample (statements from the answer) names the sample; a re-judge starts there.
    first_calls: Counter[str] = Counter()
    for index, body in enumerate(requests):
        match = SAMPLE_OF.search(body["messages"][1]["content"])
        if match is None:
            continue
        sample_id = f"s{match.group(1)}"
        first_calls[sample_id] += 1
        assert index < calls_at_commit[sample_id], f"{sample_id} was judged again after it was committed"
    # Only rows in flight on the dead worker were judged twice.
    assert len(first_calls) == 200 and sum(first_calls.values()) - 200 <= stats.redispatched
    store.close()


@pytest.mark.slow
def test_rate_limits_and_concurrency_are_global_across_workers(cluster: str) -> None:
    from assay.run._ray import RayRunStats

    samples = make_samples(6)
    with FakeOpenAIServer(responder) as server:
        started = time.monotonic()
        on_ray(samples, server, limits=Limits(rpm=240), per_worker_concurrency=8)
        elapsed = time.monotonic() - started
        # 12 calls at 4 per second from one shared bucket of 4: at least ~2 s. Two workers with
        # a budget each would finish in ~1 s.
        assert server.calls == 12 and elapsed >= 1.9

    with FakeOpenAIServer(responder, latency_s=0.05) as server:
        stats = RayRunStats()
        on_ray(make_samples(40), server, limits=Limits(concurrency=3), per_worker_concurrency=8, stats=stats)
    assert server.calls == 80 and stats.limiter_acquires == 80
    assert 1 <= stats.limiter_max_in_flight <= 3, "16 worker slots, but a global cap of 3"


def test_import_assay_does_not_import_ray() -> None:
    code = (
        "import sys, assay, assay.run, assay.run._ray, assay.cli\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_missing_ray_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.errors import MissingExtraError
    from assay.run._ray import aevaluate_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError, match=r"assay\[ray\]"):
        asyncio.run(aevaluate_ray([], [build_metric("faithfulness", WHOLE_ANSWER)], "openai:x"))


def test_judge_factory_is_picklable_by_reference() -> None:
    import pickle

    assert pickle.loads(pickle.dumps(scripted_judge)) is scripted_judge
    assert isinstance(functools.partial(scripted_judge)(), FunctionJudge)


@pytest.mark.slow
def test_cli_engine_ray_stores_the_same_results_as_the_local_engine(cluster: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from assay.cli import app

    data = tmp_path / "data.jsonl"
    data.write_text("".join(s.model_dump_json() + "\n" for s in make_samples(30)))
    with FakeOpenAIServer(responder) as server:
        common = ["run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--no-cache"]
        ray_run = CliRunner().invoke(
            app, [*common, "--engine", "ray", "--address", cluster, "--workers", "2", "--store", str(tmp_path / "r.db")]
        )
        local_run = CliRunner().invoke(app, [*common, "--store", str(tmp_path / "l.db")])
    assert ray_run.exit_code == 0, ray_run.output
    assert local_run.exit_code == 0, local_run.output

    def stored(path: Path) -> tuple[str, dict[str, Any]]:
        with RunStore(path) as store:
            (info,) = store.runs()
            values = {r["id"]: r["scores"]["faithfulness"]["value"] for r in store.records(info.run_id)}
            return info.spec.engine, values

    engine, ray_values = stored(tmp_path / "r.db")
    assert engine == "ray" and len(ray_values) == 30
    assert (engine, ray_values) == ("ray", stored(tmp_path / "l.db")[1])


def test_a_ray_worker_builds_the_shared_judge_stack_with_the_run_temperature() -> None:
    """In process, without a cluster: the worker's stack applies temperature and repeat index."""
    from assay.run import Row
    from assay.run._ray import _EvalWorker, _WorkerConfig

    config = _WorkerConfig(
        judge=scripted_judge,
        base_url=None,
        metrics=(build_metric("faithfulness", WHOLE_ANSWER).spec(),),
        limits=LIMITS,
        concurrency=2,
        cache_path=None,
        reasks=0,
        temperature=0.7,
    )
    worker = _EvalWorker(config, None, "w0")
    sample = make_samples(1)[0]
    result = asyncio.run(worker.score(Row(sample, 1), 1))
    assert result.scores["faithfulness"].value == pytest.approx(expected_value(sample))
    judge = worker._judge
    assert isinstance(judge, FunctionJudge) and len(judge.requests) == 2
    # the verdicts get the run's temperature and the repeat; the statements are the same in every repeat
    assert [(r.config.temperature, r.config.repeat) for r in judge.requests] == [(0.0, 0), (0.7, 1)]


@pytest.mark.slow
def test_a_ray_run_sends_the_run_temperature_to_the_judge(cluster: str) -> None:
    """Regression: the Ray engine stored --temperature in the run spec but never applied it."""

    samples = make_samples(6)
    with FakeOpenAIServer(responder) as server:
        result = on_ray(samples, server, temperature=0.7, per_worker_concurrency=2)
        requests = server.requests
    assert result.n_samples == 6
    assert len(requests) == 12
    # the verdicts get the run's temperature; the statements are the same in every repeat (temperature 0)
    by_kind = {(body["response_format"]["json_schema"]["name"], body["temperature"]) for body in requests}
    assert by_kind == {("Statements", 0.0), ("VerdictList", 0.7)}


# -- metrics cross the wire as specs ----------------------------------------------------------------


def _grade(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
    """Grader answers from the graded conversation: PASS when it says "blue"; level 5 when it says "green"."""
    conversation = messages[1]["content"]
    assert request.schema is not None
    if request.schema.__name__ == "BinaryGrade":
        return json.dumps({"reasoning": "looked for blue", "label": "PASS" if "blue" in conversation else "FAIL"})
    return json.dumps({"reasoning": "looked for green", "score": 5 if "green" in conversation else 1})


def grader_judge() -> FunctionJudge:
    """The picklable judge factory for the combined-grader run."""
    return FunctionJudge(_grade, name="grader", concurrency=4)


def combined_grader() -> Any:
    from assay.metrics import BinaryJudgeGrader, CombinedGrader, RangeJudgeGrader, Shot

    shot = Shot(question="Colour of the sea?", answer="Often deep indigo.", label="FAIL", reasoning="No blue named.")
    blue = BinaryJudgeGrader("The answer names the colour blue.", shots=[shot], name="blue")
    green = RangeJudgeGrader("How green is the answer?", {1: "not at all", 5: "very"}, name="green")
    return CombinedGrader([(blue, 2.0), (green, 1.0)], name="colours")


def test_aevaluate_ray_takes_metric_objects_and_refuses_one_a_worker_could_not_rebuild() -> None:
    pytest.importorskip("ray")
    from assay.errors import ConfigError
    from assay.grounding._decompose import STATEMENTS_PROMPT
    from assay.metrics import CompositeMetric, SubMetric
    from assay.run._ray import RayRunStats, aevaluate_ray

    with pytest.raises(ConfigError, match=r"takes metric objects.*build_metric\('faithfulness'\)"):
        asyncio.run(aevaluate_ray([], ["faithfulness"], "openai:x"))  # type: ignore[list-item]
    composite = CompositeMetric(
        "lambda_composite", sub_metrics=(SubMetric(STATEMENTS_PROMPT),), aggregate=lambda o: 1.0, orchestrate=_noop
    )
    stats = RayRunStats()
    with pytest.raises(ConfigError, match=r"lambda_composite.*aggregate.*lambda.*module level"):
        asyncio.run(aevaluate_ray(make_samples(2), [composite], scripted_judge, stats=stats))
    assert stats.workers_started == 0, "refused in the driver, before any cluster work"


async def _noop(sample: Sample, run: Any) -> None:
    return None


@pytest.mark.slow
def test_a_combined_grader_with_shots_runs_on_ray_as_it_runs_locally(cluster: str) -> None:
    from assay.run._ray import aevaluate_ray

    samples = make_samples(6)
    metric = combined_grader()
    local = asyncio.run(aevaluate(samples, [metric], grader_judge()))
    distributed = asyncio.run(aevaluate_ray(samples, [metric], grader_judge, workers=2, per_worker_concurrency=2))
    assert distributed.n_samples == local.n_samples == 6

    def outcome(results: Sequence[SampleResult]) -> dict[str, tuple[float, list[Any], list[float]]]:
        return {
            r.sample.id: (
                r.scores["colours"].value,
                [(v.subject, v.value) for v in r.scores["colours"].verdicts],
                [p.value for p in r.scores["colours"].parts],
            )
            for r in results
        }

    assert outcome(distributed.results) == outcome(local.results)
    for result in distributed.results:
        answer = result.sample.answer or ""
        blue, green = float("blue" in answer), float("green" in answer)
        score = result.scores["colours"]
        assert score.value == pytest.approx((2 * blue + green) / 3), result.sample.id
        assert score.spec == metric.spec(), "the worker rebuilt the metric its spec describes"
        shown = score.parts[0].calls[0].messages[0]["content"]
        assert "Example 1:" in shown and "Often deep indigo." in shown, "the shot reached the worker"
    assert {s.scores["colours"].value for s in distributed.results} >= {0.0, 1 / 3, 2 / 3, 1.0}
