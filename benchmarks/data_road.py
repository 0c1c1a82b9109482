"""Follow the data of ``assay run`` from the command to the judged row: which modules it passes.

Runs ``assay run data.jsonl`` in-process (one row, a judge on a loopback server) under
:func:`sys.setprofile` and keeps every call into an ``assay`` module that *carries the
data*: a call whose arguments, return value or yielded value hold the data file's path or
the row's text (the answer holds a marker found nowhere else), or a generator whose frame
holds them. The walk is what a reader following the data reads: each function once, in
the order the data first reaches it, from ``cli/_run.py:run`` until the data enters a
metric (the row handed to the judging). A *stop* is a function; a *return* is a stop in a
module the walk has already left; a module's *entries* are the runs of consecutive stops
in it.

    PYTHONPATH=src python benchmarks/data_road.py

prints ``N stops in M modules, K returns to a module already left`` and the entries per
module. ``tests/test_data_road.py`` holds the property the reading package keeps.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

MARKER = "QZXV-road-marker"
"""In the row's answer and nowhere else: a value holding it carries the data."""


@dataclass(frozen=True)
class Walk:
    """The stops of the data, in order: (module, function)."""

    stops: tuple[tuple[str, str], ...]

    @property
    def modules(self) -> list[str]:
        return list(dict.fromkeys(module for module, _ in self.stops))

    def entries(self) -> list[str]:
        """The module of each run of consecutive stops in one module, in order."""
        runs: list[str] = []
        for module, _ in self.stops:
            if not runs or runs[-1] != module:
                runs.append(module)
        return runs

    @property
    def returns(self) -> int:
        runs = self.entries()
        return len(runs) - len(set(runs))

    def per_module(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for module in self.entries():
            counts[module] = counts.get(module, 0) + 1
        return counts

    def summary(self) -> str:
        lines = [
            f"{len(self.stops)} stops in {len(self.modules)} modules, {self.returns} returns to a module already left"
        ]
        lines += [f"  {module}: entered {n}x" for module, n in self.per_module().items()]
        lines.append("road: " + " -> ".join(f"{m.removeprefix('assay.')}:{f}" for m, f in self.stops))
        return "\n".join(lines)


_NOT_STOPS = frozenset({"<module>", "<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "__create_fn__"})


def _holds(value: Any, needles: tuple[str, ...], depth: int = 0) -> bool:
    """Whether ``value`` holds the data: a marker or the path, in it or (shallowly) inside it."""
    if depth > 6:
        return False
    if isinstance(value, str):
        return any(needle in value for needle in needles)
    if isinstance(value, bytes | bytearray):
        return any(needle.encode() in value for needle in needles)
    if isinstance(value, Path):
        return str(value) in needles
    if isinstance(value, dict):
        return any(_holds(v, needles, depth + 1) for v in list(value.values())[:50])
    if isinstance(value, list | tuple):
        return any(_holds(v, needles, depth + 1) for v in list(value)[:50])
    if hasattr(value, "gi_frame"):  # a generator: what its frame holds
        frame = value.gi_frame
        return frame is not None and depth < 2 and any(_holds(v, needles, depth + 2) for v in frame.f_locals.values())
    model = getattr(type(value), "model_fields", None)
    if isinstance(model, dict):
        return any(_holds(getattr(value, name, None), needles, depth + 1) for name in model)
    return False


def walk_run(workdir: Path) -> Walk:
    """Run ``assay run`` on a one-row JSONL file in ``workdir`` and follow its data."""
    from typer.testing import CliRunner

    from assay.cli import app
    from assay.testing import FakeOpenAIServer

    data = workdir / "data.jsonl"
    row = {
        "id": "r1",
        "question": "What colour is the sky?",
        "answer": f"The sky is blue. {MARKER}.",
        "contexts": ["The sky is blue."],
    }
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    needles = (MARKER, str(data), "data.jsonl")
    stops: dict[tuple[str, str], None] = {}
    state = {"on": False, "done": False}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if state["done"] or event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        if not isinstance(module, str) or not module.startswith("assay"):
            return
        name = frame.f_code.co_name
        if name in _NOT_STOPS or frame.f_code.co_filename == "<string>":  # comprehensions, generated __init__
            return
        if module == "assay.cli._run" and name == "run" and event == "call":
            state["on"] = True
        if not state["on"]:
            return
        carried = _holds(arg, needles) if event == "return" else _holds(dict(frame.f_locals), needles)
        if not carried:
            return
        if module.startswith("assay.metrics"):
            state["done"] = True  # the row is handed to the judging
            return
        stops.setdefault((module, frame.f_code.co_qualname), None)

    def judge(body: dict[str, Any]) -> str:
        user = str(body["messages"][1]["content"])  # type: ignore[index]
        if "<answer>" in user:
            answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
            return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
        items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
        verdicts = [{"statement": t, "reason": "r", "verdict": 1} for t in (i.split("] ", 1)[1] for i in items)]
        return json.dumps({"verdicts": verdicts})

    with FakeOpenAIServer(judge) as server:
        args = ["run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--no-cache"]
        args += ["--metric", "faithfulness", "--store", str(workdir / "runs.sqlite")]
        sys.setprofile(profile)
        try:
            result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": "sk-road", "COLUMNS": "200"})
        finally:
            sys.setprofile(None)
    if result.exit_code != 0:
        raise RuntimeError(f"assay run failed ({result.exit_code}): {result.output}")
    return Walk(tuple(stops))


def _tmp() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def main() -> None:
    for workdir in _tmp():
        print(walk_run(workdir).summary())


if __name__ == "__main__":
    main()
