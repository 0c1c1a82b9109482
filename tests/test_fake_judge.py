"""The fake judge (``assay.testing.word_overlap_answer``, ``assay judges fake``): every prompt answered by its rule.

Issue 63, "the first hour needs no Python": a shell user points ``--base-url`` at ``assay
judges fake`` and follows the docs without a key or the local model. Its answers must be
valid in the schema asked for (a fake whose answers are unscored teaches the wrong thing),
follow the documented word rule (so a score means something a reader can check by eye),
and never pass for a real judge (it serves one model name, whose trust line says "not
measured").
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from assay import Sample
from assay.prompts import JudgePrompt
from assay.testing import FAKE_JUDGE_MODEL, content_words, word_overlap_answer
from first_hour import assay_cli, cli_env

ROOT = Path(__file__).resolve().parents[1]


def _body(messages: list[Any], schema: type[BaseModel]) -> dict[str, Any]:
    """The request body OpenAIJudge sends for ``messages`` constrained to ``schema``."""
    from assay.models._openai import _response_format

    return {"model": FAKE_JUDGE_MODEL, "messages": messages, "response_format": _response_format(schema, "json_schema")}


def _ask(prompt: JudgePrompt[Any, Any], value: BaseModel) -> Any:
    parsed = prompt.parse(word_overlap_answer(_body(prompt.render(value), prompt.output_model)))
    assert isinstance(parsed, prompt.output_model), parsed
    return parsed


# --- the rules, prompt by prompt ---------------------------------------------------------------

CONTEXT = "The Eiffel Tower was constructed from 1887 to 1889. The tower is 330 metres tall."


def test_statements_are_the_answers_sentences_and_a_sentence_is_its_own_statement() -> None:
    from assay.grounding._decompose import SENTENCE_PROMPT, STATEMENTS_PROMPT, AnswerToSplit, SentenceToSplit

    answer = "The tower was completed in 1889. Is it tall? It is 330 metres tall!"
    got = _ask(STATEMENTS_PROMPT, AnswerToSplit(question="When?", answer=answer))
    assert got.statements == ["The tower was completed in 1889.", "Is it tall?", "It is 330 metres tall!"]
    got = _ask(SENTENCE_PROMPT, SentenceToSplit(question="q", previous="p", sentence="It is tall."))
    assert got.statements == ["It is tall."]


@pytest.mark.parametrize(
    ("statement", "verdict"),
    [
        ("The tower is 330 metres tall.", 1),
        ("The Eiffel Tower was completed in 1889.", 0),  # 'completed' is not 'constructed'
        ("The tower is 300 metres tall.", 0),  # a changed number is a missing word
        ("The tower is not 330 metres tall.", 0),  # 'not' is a content word
        ("It was built from 1887.", 0),
        ("It is the tower.", 1),  # only function words besides 'tower'
    ],
)
def test_a_statement_is_supported_when_each_content_word_is_a_word_of_the_context(statement: str, verdict: int) -> None:
    from assay.grounding._verify import STATEMENT_PROMPT, STATEMENT_PROMPT_V1, StatementCheck
    from assay.metrics._faithfulness import BATCH_PROMPT, StatementsCheck

    for prompt in (STATEMENT_PROMPT, STATEMENT_PROMPT_V1):
        got = _ask(prompt, StatementCheck(context=[CONTEXT], statement=statement))
        assert got.verdict == verdict, got
        assert ("every content word" in got.reason) == bool(verdict)
    batch = _ask(BATCH_PROMPT, StatementsCheck(context=[CONTEXT, "Paris."], statements=[statement, "Paris."]))
    assert [v.verdict for v in batch.verdicts] == [verdict, 1]
    assert batch.verdicts[0].statement == statement


def test_list_numbers_of_the_rendering_are_not_words_of_the_context() -> None:
    from assay.grounding._verify import STATEMENT_PROMPT, StatementCheck

    # contexts render as "[1] ...", "[2] ...": those numbers are not in the data
    got = _ask(STATEMENT_PROMPT, StatementCheck(context=["Rome.", "Oslo."], statement="Rome has 2 parks."))
    assert got.verdict == 0 and "2" in got.reason


def test_relevance_usefulness_requirements_outcome_graders_and_retrieval_follow_their_rules() -> None:
    from assay.metrics._agent import (
        REQUIREMENT_PROMPT,
        REQUIREMENTS_PROMPT,
        USER_REQUIREMENTS_PROMPT,
        GoalToSplit,
        RequirementCheck,
        UserTurnsToSplit,
    )
    from assay.metrics._holistic import GOAL_PROMPT, OUTCOME_PROMPT, OutcomeCheck, TraceToRead
    from assay.metrics._rag import CHUNK_PROMPT, RELEVANCY_PROMPT, ChunkUsefulness, QuestionAnswer

    relevant = _ask(RELEVANCY_PROMPT, QuestionAnswer(question="How tall is the tower?", answer="The tower is tall."))
    assert (relevant.relevant, relevant.noncommittal) == (1, 0)
    evasive = _ask(RELEVANCY_PROMPT, QuestionAnswer(question="How tall is the tower?", answer="I don't know."))
    assert (evasive.relevant, evasive.noncommittal) == (0, 1)

    useful = ChunkUsefulness(question="How tall?", answer="It is 330 metres.", context=CONTEXT)
    assert _ask(CHUNK_PROMPT, useful).verdict == 1
    assert _ask(CHUNK_PROMPT, useful.model_copy(update={"context": "Paris is in France."})).verdict == 0

    goal = "Cancel reservation ABC. Refund to the gift card."
    assert _ask(REQUIREMENTS_PROMPT, GoalToSplit(goal=goal)).requirements == [
        "Cancel reservation ABC.",
        "Refund to the gift card.",
    ]
    turns = "[1] Cancel reservation ABC.\n[3] Thanks."
    assert _ask(USER_REQUIREMENTS_PROMPT, UserTurnsToSplit(user_turns=turns)).requirements == [
        "Cancel reservation ABC.",
        "Thanks.",
    ]
    calls = (
        "Changes made: call 2 cancel_reservation\nFailed attempts (changed nothing): call 3 refund\n"
        '[call 1] read: get_reservation({"id": "ABC"})\n  result: ok\n'
        '[call 2] CHANGE, succeeded: cancel_reservation({"reservation": "ABC"})\n  result: cancelled\n'
        '[call 3] CHANGE FAILED: refund({"to": "gift card"})\n  result: error'
    )
    check = RequirementCheck(policy="", calls=calls, final_reply="Done.", requirement="Cancel reservation ABC.")
    met = _ask(REQUIREMENT_PROMPT, check)
    assert (met.verdict, met.calls) == ("met", [1, 2])
    refund = _ask(REQUIREMENT_PROMPT, check.model_copy(update={"requirement": "Refund to the gift card."}))
    assert refund.verdict == "not met"  # only the failed call says 'gift card'

    trace = '[1] USER: Cancel ABC.\n[2] ASSISTANT CALLS cancel({"id": "ABC"})\n[3] TOOL RESULT: cancelled'
    read = _ask(GOAL_PROMPT, TraceToRead(trace=trace))
    assert read.user_goal == "Cancel ABC." and "cancel" in read.end_state
    assert _ask(OUTCOME_PROMPT, OutcomeCheck(goal=read.user_goal, end_state=read.end_state)).verdict == 1
    assert _ask(OUTCOME_PROMPT, OutcomeCheck(goal="Refund ABC.", end_state=read.end_state)).verdict == 0


def _grade(metric: Any, sample: Sample, schema: type[BaseModel]) -> Any:
    return schema.model_validate_json(word_overlap_answer(_body(metric.render(sample), schema)))


def test_graders_pass_when_the_response_says_the_criterions_words() -> None:
    from assay.metrics import BinaryJudgeGrader, RangeJudgeGrader, TemplatedPromptJudgeGrader
    from assay.metrics._graders import _OUTPUT_MODELS, BinaryGrade

    says = Sample(id="a", question="Refund?", answer="Refunds take 30 days.")
    other = Sample(id="b", question="Refund?", answer="Ask the shop.")
    quoted = BinaryJudgeGrader('The answer says "30 days".')
    assert _grade(quoted, says, BinaryGrade).label == "PASS"
    assert _grade(quoted, other, BinaryGrade).label == "FAIL"
    plain = BinaryJudgeGrader("Mentions refunds.")
    assert _grade(plain, says, BinaryGrade).label == "PASS"
    assert _grade(plain, other, BinaryGrade).label == "FAIL"

    scale = RangeJudgeGrader("refunds days shop", {1: "none", 2: "some", 3: "all"})
    model = scale._sub.prompt.output_model
    levels = [
        _grade(scale, Sample(id="r", answer=text), model).score
        for text in ("Refunds take 30 days at the shop.", "Refunds take 30 days.", "Ask the shop.", "Hello.")
    ]
    assert levels == [3, 2, 2, 1]  # 1 + round(share * 2): shares 1, 2/3, 1/3, 0

    for output, model in _OUTPUT_MODELS.items():
        templated = TemplatedPromptJudgeGrader('Does {answer} say "30 days"?', output=output)
        got = _grade(templated, says, model).model_dump()
        assert got.get("label", got.get("verdict")) in ("PASS", 1), (output, got)
        got = _grade(templated, other, model).model_dump()
        assert got.get("label", got.get("verdict")) in ("FAIL", 0), (output, got)


def test_retrieval_relevance_is_half_the_expected_passages_content_words() -> None:
    from assay.retrieval._judges import JudgePair, RelevanceVerdict, render_relevance_prompt

    def verdict(retrieved: str) -> int:
        pair = JudgePair(query="tower height", expected="The tower is 330 metres tall.", retrieved=retrieved)
        body = _body(render_relevance_prompt(pair), RelevanceVerdict)
        return RelevanceVerdict.model_validate_json(word_overlap_answer(body)).verdict

    assert content_words("The tower is 330 metres tall.") == ["tower", "330", "metres", "tall"]
    assert verdict("A tower of 330 metres.") == 1  # 3 of 4
    assert verdict("A tower in Paris.") == 0  # 1 of 4


def _module_prompts() -> dict[str, JudgePrompt[Any, Any]]:
    found: dict[str, JudgePrompt[Any, Any]] = {}
    for path in (ROOT / "src" / "assay").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts).removesuffix(".__init__")
        if "JudgePrompt(" not in path.read_text(encoding="utf-8") or name.startswith("assay.prompts"):
            continue
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if isinstance(value, JudgePrompt):
                found[f"{name}.{key}"] = value
    return found


def test_every_prompt_of_the_package_gets_a_rule_answer_not_a_placeholder() -> None:
    """A new prompt must get a rule here: a minimal instance ('x', verdict 0) would look like a verdict."""
    from assay.testing._answers import _rule_answer

    prompts = _module_prompts()
    assert len(prompts) >= 11, sorted(prompts)
    for where, prompt in prompts.items():
        inputs = {
            name: ["A tower is tall."] if "list" in str(field.annotation) else "A tower is tall."
            for name, field in prompt.input_model.model_fields.items()
        }
        body = _body(prompt.render(prompt.input_model(**inputs)), prompt.output_model)
        assert _rule_answer(body) is not None, f"{where}: no rule answers it"
        assert isinstance(prompt.parse(word_overlap_answer(body)), prompt.output_model), where


# --- the fake server's default is the rule: a clean run, not a page of unscored results ----------


def test_the_fake_servers_default_answers_give_a_clean_faithfulness_run() -> None:
    pytest.importorskip("openai")
    import assay
    from assay.testing import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        judge = assay.get_judge("openai:fake", base_url=server.base_url, api_key="sk-test")
        result = assay.evaluate(ROOT / "examples" / "rag.jsonl", ["faithfulness"], judge=judge, progress=False)
    summary = result.summary()["faithfulness"]
    # The minimal-instance default left 7 of 12 unscored (verdict_count_mismatch).
    assert summary.n_unscored == 0 and summary.n_scored == 12, summary
    by_id = {r.sample.id: r.scores["faithfulness"] for r in result.results}
    assert by_id["eiffel"].value == 0.5  # 'completed' is not in the context; '330 metres tall' is
    assert [v.value for v in by_id["eiffel"].verdicts] == [0, 1]
    assert by_id["amazon"].value == 0.0  # 'roughly' and 'flows' are not in the context


def test_a_server_that_serves_one_model_refuses_any_other_name() -> None:
    pytest.importorskip("openai")
    import asyncio

    from assay.errors import JudgeError
    from assay.models import JudgeResponse, close_judge, get_judge
    from assay.testing import FakeOpenAIServer

    async def ask(model: str) -> JudgeResponse:
        judge = get_judge(model, base_url=server.base_url, api_key="sk-test")
        try:
            return await judge.generate([{"role": "user", "content": "hi"}])
        finally:
            await close_judge(judge)

    with FakeOpenAIServer(only_model=FAKE_JUDGE_MODEL) as server:
        with pytest.raises(JudgeError, match="fake judge and answers only as `fake-word-overlap`"):
            asyncio.run(ask("openai:gpt-4o-mini"))
        assert asyncio.run(ask(f"openai:{FAKE_JUDGE_MODEL}")).text == "OK"


@pytest.mark.parametrize("sent", [b"", b'{"model": "m", "messa'], ids=["no body", "half a body"])
def test_a_request_whose_body_never_fully_arrived_is_not_a_request(sent: bytes) -> None:
    """A client killed while sending (a Ray worker, a ``kill -9``) leaves headers promising a body.

    The server kept it as the request ``{}`` (a call with no messages, which a test then read
    as a judged sample); it never arrived, so it is neither kept nor counted."""
    from assay.testing import FakeAnthropicServer, FakeOpenAIServer

    for server_type, path in ((FakeOpenAIServer, "/v1/chat/completions"), (FakeAnthropicServer, "/v1/messages")):
        with server_type() as server:
            port = int(server.base_url.split(":")[2].split("/")[0])
            with socket.create_connection(("127.0.0.1", port)) as cut:
                cut.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n".encode() + sent)
                cut.shutdown(socket.SHUT_WR)  # the client is gone: the rest never comes
                assert cut.recv(1024) == b""  # closed without an answer
            with socket.create_connection(("127.0.0.1", port)) as whole:  # the server still answers
                body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
                head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                whole.sendall(f"{head}Content-Type: application/json\r\nx-api-key: k\r\n\r\n".encode() + body)
                assert whole.recv(1024).startswith(b"HTTP/1.")
            assert server.calls == 1 and server.requests == [json.loads(body)], server_type.__name__


# --- assay judges fake, from the shell -----------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``assay judges fake`` in a subprocess, and the flags it printed."""
    env = {k: v for k, v in cli_env().items() if k != "OPENAI_API_KEY"}  # no key anywhere
    process = subprocess.Popen(
        # --port 0: the server binds a free port itself (a port probed free, then bound by the
        # child, could be taken in between by another worker's connection: seen under -n 3)
        [sys.executable, "-m", "assay", "judges", "fake", "--port", "0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        if not first:  # it ended before saying where it serves: say what it printed
            process.wait(timeout=30)
        assert "fake judge (a word rule, not a model) serving on http://127.0.0.1:" in first, (
            first + process.stderr.read() if process.stderr and process.poll() is not None else first
        )
        flags = process.stdout.readline().split("use it with: ")[1].split()
        yield process, flags
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)  # reaps it and closes its pipes


def test_assay_judges_fake_serves_assay_run_by_the_rule_and_stops_cleanly_on_ctrl_c(
    tmp_path: Path, served: tuple[subprocess.Popen[str], list[str]]
) -> None:
    process, flags = served
    assert flags[:2] == ["--judge", f"openai:{FAKE_JUDGE_MODEL}"] and flags[2] == "--base-url"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in cli_env().items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", "examples/rag.jsonl", "-m", "faithfulness", *flags, "--out", "r.jsonl"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    flat = " ".join(done.stdout.split())
    assert f"judge openai:{FAKE_JUDGE_MODEL}" in flat
    assert "not measured for this judge" in flat  # the trust line never dresses it up
    # docs/getting-started/output.md shows this run: its summary lines are what the run prints
    page = (ROOT / "docs" / "getting-started" / "output.md").read_text(encoding="utf-8")
    shown = page.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    for line in [shown[4], *shown[6:9]]:  # the table's row, prompts, trust line, calls and tokens
        assert line in printed, line
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    scores = {i: r["scores"]["faithfulness"] for i, r in rows.items()}
    assert all(s["unscored_reason"] is None for s in scores.values()), scores
    eiffel = {v["subject"]: v["value"] for v in scores["eiffel"]["verdicts"]}
    assert eiffel == {"The Eiffel Tower was completed in 1889.": 0, "It is about 330 metres tall.": 1}
    wrong = {v["subject"]: v["value"] for v in scores["python-gil-wrong"]["verdicts"]}
    assert set(wrong.values()) == {0}, wrong  # 'removed', 'entirely', '3.10'... are not in the context
    assert scores["insulin"]["value"] == 0.0  # 'made', 'lets', 'cells take up': none said that way

    # A real judge's name on the fake's port is refused, never recorded as that judge.
    refused = subprocess.run(
        [sys.executable, "-m", "assay", "run", "examples/rag.jsonl", "-m", "faithfulness", "--judge",
         "openai:gpt-4o-mini", flags[2], flags[3], "--no-cache"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "answers only as `fake-word-overlap`" in " ".join((refused.stdout + refused.stderr).split())

    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "fake judge stopped after" in err, err
    assert int(err.split("stopped after ")[1].split()[0]) > 20  # both runs reached it


def test_assay_judges_fake_on_a_taken_port_says_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = assay_cli(tmp_path, "judges", "fake", "--port", str(port), timeout=60)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use: pass --port N" in done.stderr
    assert "Traceback" not in done.stderr


def test_sigterm_stops_it_cleanly_too(served: tuple[subprocess.Popen[str], list[str]]) -> None:
    process, _ = served
    os.kill(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=10)
    assert process.returncode == 0 and "fake judge stopped after 0 request(s)" in err, err


def test_the_judges_guides_snippet_prints_what_the_page_says(capsys: pytest.CaptureFixture[str]) -> None:
    """The page shows its output under ``# prints:``; the snippet must print exactly that."""
    pytest.importorskip("openai")
    from test_readme import code_blocks

    page = ROOT / "docs" / "guides" / "judges.md"
    (block,) = [b for b in code_blocks(page) if b.lang == "python" and "FakeOpenAIServer()" in b.code]
    shown = block.code.split("# prints: ", 1)[1].strip()
    cwd = Path.cwd()
    os.chdir(ROOT)  # the snippet reads examples/rag.jsonl
    try:
        exec(compile(block.code, str(page), "exec"), {"__name__": "judges_snippet"})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.strip() == shown == "20 requests; mean 0.083, 12 scored, 0 unscored"


def _as_a_background_job() -> None:
    """What a non-interactive shell does to a command it starts with ``&``: SIGINT and SIGQUIT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)


def test_kill_int_stops_a_fake_judge_started_as_a_background_job(tmp_path: Path) -> None:
    """``assay judges fake &`` in a CI script inherits SIGINT ignored; its documented stop must still stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "judges", "fake", "--port", "0"],
        cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_a_background_job,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert "serving on http://127.0.0.1:" in process.stdout.readline()
        ignored = int(next(line for line in Path(f"/proc/{process.pid}/status").read_text().splitlines()
                           if line.startswith("SigIgn:")).split()[1], 16)  # fmt: skip
        assert ignored & (1 << (signal.SIGQUIT - 1)), "the child did not start as a background job would"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "fake judge stopped after 0 request(s)" in err


def test_ctrl_c_interrupts_restores_what_it_found() -> None:
    from assay.cli._console import ctrl_c_interrupts

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with ctrl_c_interrupts():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
