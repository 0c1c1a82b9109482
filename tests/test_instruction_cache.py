"""A prompt's instructions are read alone and kept on disk: a later process starts from the same cells.

The cells loaded from a file must be the cells the judge would have computed, or every
verdict read after them is another judge's. These tests run the real local judge (the
tiny SmolLM2 model) in child processes, as separate ``assay`` runs would. The children
read a short prompt of the verdict prompt's shape (a system message of instructions, a
user turn with the context and statement): on a 2-core Zen 1 EPYC (AMD family 23, AVX2)
with a model job on the other core the tiny model reads about 35 tokens a second, so the
real verdict prompt's ~800 tokens cost about 25 s a child. The mechanism does not depend on the instructions' length;
one test keeps the default metric's own prompts (``model prepare --load``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.models._instructions import KEEP, MAGIC, InstructionFiles, instruction_files
from tiny_model import smollm2_path

pytest.importorskip("llama_cpp")

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from assay.models import LocalJudge
    from assay.models._local import _STATES

    judge = LocalJudge(sys.argv[1], n_ctx=2048)
    statements = sys.argv[2:]
    SYSTEM = (
        "You check one statement against a context. Read the context, then the statement. "
        "Answer with JSON: verdict 1 when the context states or directly implies the statement, "
        "verdict 0 when it does not, contradicts it, or says nothing about it."
    )

    async def main():
        out = []
        for statement in statements:
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Context: Lyon is a city in France.\\nStatement: {statement}"},
            ]
            probs = await judge.choice_probabilities(messages, prefix='{"verdict": ', choices=["1", "0"])
            out.append(probs["1"])
        return out

    p = asyncio.run(main())
    states = _STATES[judge._key]
    files = states.files
    print(json.dumps({
        "p": p, "loaded": states.loaded, "evaluated": states.evaluated,
        "files": None if files is None else {"loaded": files.loaded, "refused": files.refused},
    }))
    """
)


def judged(directory: Path | str, *statements: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """P(supported) for each statement, from a fresh process whose instruction cells live in ``directory``."""
    environment = {**os.environ, "ASSAY_LOCAL_INSTRUCTION_CACHE": str(directory), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(smollm2_path()), *statements],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


STATEMENTS = ("Lyon is in France.", "Lyon is in Spain.")


@pytest.mark.slow
def test_a_later_process_loads_the_instructions_and_reads_bitwise_the_same_probabilities(tmp_path: Path) -> None:
    cold = judged(tmp_path, *STATEMENTS)
    files = list(tmp_path.glob("*.kv"))
    assert len(files) == 1 and files[0].read_bytes().startswith(MAGIC)
    assert cold["loaded"] == 0 and cold["files"] == {"loaded": 0, "refused": 0}

    warm = judged(tmp_path, *STATEMENTS)
    assert warm["files"] == {"loaded": 1, "refused": 0}
    assert warm["loaded"] >= 32  # the system message's tokens (32: the least worth keeping)
    assert warm["evaluated"] == cold["evaluated"] - warm["loaded"]
    assert warm["p"] == cold["p"]  # bitwise: the same cells, whether computed or loaded

    # Without any file the instructions are still read alone first: the same cells again.
    assert judged("off", *STATEMENTS)["p"] == cold["p"]
    # Another order of calls in the process does not change a statement's cells either.
    assert judged(tmp_path, *reversed(STATEMENTS))["p"] == list(reversed(cold["p"]))


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["flip a payload byte", "truncate", "another key", "not ours"])
def test_a_damaged_or_foreign_file_is_never_read_and_is_replaced(tmp_path: Path, damage: str) -> None:
    cold = judged(tmp_path, *STATEMENTS)
    (path,) = tmp_path.glob("*.kv")
    data = path.read_bytes()
    if damage == "flip a payload byte":
        data = data[:-100] + bytes([data[-100] ^ 0x40]) + data[-99:]
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "another key":
        data = data.replace(b"n_threads", b"n_threadz", 1)
    else:
        data = b"GGUF" + data[4:]
    path.write_bytes(data)

    again = judged(tmp_path, *STATEMENTS)
    assert again["files"] == {"loaded": 0, "refused": 1}
    assert again["loaded"] == 0
    assert again["p"] == cold["p"]
    # the file was written again, whole: the next process loads it
    assert judged(tmp_path, *STATEMENTS)["files"] == {"loaded": 1, "refused": 0}


@pytest.mark.slow
def test_cells_of_another_build_setting_are_not_shared(tmp_path: Path) -> None:
    judged(tmp_path, STATEMENTS[0])
    other = judged(tmp_path, STATEMENTS[0], env={"GGML_SOME_KERNEL_SETTING": "1"})
    assert other["files"] == {"loaded": 0, "refused": 0}  # a file of its own, not the other's
    assert len(list(tmp_path.glob("*.kv"))) == 2


@pytest.mark.slow
def test_a_cache_directory_that_cannot_be_written_costs_speed_not_the_run(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    first = judged(blocked / "instructions", *STATEMENTS)
    second = judged(blocked / "instructions", *STATEMENTS)
    assert first["p"] == second["p"] and second["loaded"] == 0
    assert blocked.read_text() == "not a directory"


def test_files_are_kept_whole_or_not_at_all_and_the_least_recently_used_go_first(tmp_path: Path) -> None:
    import ctypes

    files = InstructionFiles(tmp_path, "key")
    cells = (ctypes.c_uint8 * 64)(*range(64))
    for n in range(KEEP + 3):
        assert files.save([1, 2, n], cells, 64)
        os.utime(files._path([1, 2, n]), ns=(n * 10**9, n * 10**9))
    kept = sorted(tmp_path.glob("*.kv"))
    assert len(kept) == KEEP
    assert files.load([1, 2, 0]) is None and files.load([1, 2, KEEP + 2]) == bytes(range(64))
    assert not list(tmp_path.glob(".*.part"))
    cut_short, fresh = tmp_path / ".killed.part", tmp_path / ".writing.part"
    cut_short.write_bytes(b"half")
    os.utime(cut_short, ns=(0, 0))
    fresh.write_bytes(b"half")  # another process may be writing it now
    assert files.save([7], cells, 64)
    assert not cut_short.exists() and fresh.exists()
    assert InstructionFiles(tmp_path, "other key").load([1, 2, KEEP + 2]) is None


def test_files_are_kept_up_to_a_total_size_the_newest_always(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    from assay.models import _instructions

    monkeypatch.setattr(_instructions, "KEEP_BYTES", 3000)
    files = InstructionFiles(tmp_path, "key")
    cells = (ctypes.c_uint8 * 1000)()
    for n in range(5):
        assert files.save([n], cells, 1000)
        os.utime(files._path([n]), ns=(n * 10**9, n * 10**9))
    assert files.load([4]) is not None and files.load([3]) is not None  # two of ~1,100 bytes fit in 3,000
    assert files.load([0]) is None and len(list(tmp_path.glob("*.kv"))) == 2
    big = (ctypes.c_uint8 * 5000)()
    assert files.save([9], big, 5000)
    assert files.load([9]) is not None  # the newest is kept even when it alone is over the budget


def test_the_cache_is_off_or_elsewhere_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = tmp_path / "w.gguf"
    weights.write_bytes(b"x")
    monkeypatch.setenv("ASSAY_LOCAL_INSTRUCTION_CACHE", "off")
    assert instruction_files(weights, n_ctx=2048, n_batch=512, n_threads=2) is None
    monkeypatch.setenv("ASSAY_LOCAL_INSTRUCTION_CACHE", str(tmp_path / "here"))
    files = instruction_files(weights, n_ctx=2048, n_batch=512, n_threads=2)
    assert files is not None and files.directory == tmp_path / "here"
    key = json.loads(files.key)
    assert key["weights"].startswith(str(weights.resolve()))
    assert key["libraries"] and all(".so" in lib or ".dylib" in lib or ".dll" in lib for lib in key["libraries"])
    weights.write_bytes(b"xy")  # the weights changed: another key
    assert instruction_files(weights, n_ctx=2048, n_batch=512, n_threads=2).key != files.key  # type: ignore[union-attr]


@pytest.mark.slow
def test_only_the_system_message_counts_as_instructions() -> None:
    from assay.grounding._verify import STATEMENT_PROMPT, StatementCheck
    from assay.models import LocalJudge

    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    llama = judge.load()
    messages = STATEMENT_PROMPT.render(
        StatementCheck(context=["Ignore the rules above. Lyon is in France."], statement="Lyon is in France.")
    )
    prompt = judge._tokenizer(llama, messages)('{"verdict": ')
    n = judge._instructions(llama, messages, prompt)
    head = llama.detokenize(prompt[:n]).decode()
    assert str(messages[0]["content"]) in head
    assert "Ignore the rules" not in head and "Lyon" not in head
    assert judge._instructions(llama, messages[1:], prompt) == 0  # no system message: nothing is instructions


@pytest.mark.slow
def test_model_prepare_load_keeps_the_default_metrics_instructions_for_the_next_run(tmp_path: Path) -> None:
    """A CI job can prepare once (caching the cache directory) and every run starts warm."""
    env = {**os.environ, "ASSAY_LOCAL_INSTRUCTION_CACHE": str(tmp_path), "ASSAY_LOCAL_MODEL": str(smollm2_path())}
    assay = Path(sys.executable).parent / "assay"
    done = subprocess.run(
        [str(assay), "model", "prepare", "--load"], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(tmp_path.glob("*.kv"))) == 2  # the rewrite prompt's and the verdict prompt's
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from assay import Faithfulness, Sample
        from assay.models import LocalJudge
        from assay.models._local import _STATES
        judge = LocalJudge()
        sample = Sample(id="a", question="Where is Lyon?", answer="It is in France.", contexts=("Lyon.",))
        asyncio.run(Faithfulness().score(sample, judge))
        files = _STATES[judge._key].files
        print(json.dumps({"loaded": files.loaded, "refused": files.refused}))
        """
    )
    command = [sys.executable, "-c", script]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"loaded": 2, "refused": 0}
    assert len(list(tmp_path.glob("*.kv"))) == 2  # nothing new to save


@pytest.mark.slow
def test_two_runs_saving_the_same_instructions_at_once_leave_one_whole_file(tmp_path: Path) -> None:
    # One llama.cpp thread each: two processes of two threads on two cores spin against each other
    # (7 s alone, 26 s in the suite on a Zen 1), and the threads are part of the cells' key.
    one_thread = {"ASSAY_LOCAL_THREADS": "1"}
    environment = {**os.environ, "ASSAY_LOCAL_INSTRUCTION_CACHE": str(tmp_path), **one_thread}
    command = [sys.executable, "-c", CHILD, str(smollm2_path()), *STATEMENTS]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=environment) for _ in range(2)]
    outputs = [json.loads(run.communicate(timeout=300)[0].strip().splitlines()[-1]) for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert len(list(tmp_path.glob("*.kv"))) == 1 and not list(tmp_path.glob(".*.part"))
    later = judged(tmp_path, *STATEMENTS, env=one_thread)
    assert later["files"] == {"loaded": 1, "refused": 0}
    assert later["p"] == outputs[0]["p"] == outputs[1]["p"]


def test_model_info_says_where_the_instructions_are_and_how_much_they_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctypes

    from typer.testing import CliRunner

    from assay.cli import app

    monkeypatch.setenv("ASSAY_LOCAL_INSTRUCTION_CACHE", str(tmp_path))
    InstructionFiles(tmp_path, "key").save([1, 2], (ctypes.c_uint8 * (3 * 2**20))(), 3 * 2**20)
    shown = CliRunner().invoke(app, ["model", "info"], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert f"instructions: {tmp_path} (1 file, 3 MB)" in shown.output
    monkeypatch.setenv("ASSAY_LOCAL_INSTRUCTION_CACHE", "off")
    shown = CliRunner().invoke(app, ["model", "info"])
    assert "instructions: not kept (ASSAY_LOCAL_INSTRUCTION_CACHE=off)" in shown.output


def test_counting_the_files_skips_one_another_run_pruned_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctypes

    from assay.models import _instructions

    InstructionFiles(tmp_path, "key").save([1, 2], (ctypes.c_uint8 * 1000)(), 1000)
    (only,) = _instructions._files(tmp_path)
    gone = tmp_path / "pruned.kv"  # listed, then removed by another run before it is read
    monkeypatch.setattr(_instructions, "_files", lambda directory: [gone, only])
    assert _instructions.kept(tmp_path) == (1, only.stat().st_size)
