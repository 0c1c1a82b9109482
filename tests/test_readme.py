"""Every code block of README.md and of the documentation site runs here, so an example that does not run fails CI.

The pages: README.md and every ``.md`` file under ``docs/`` (the site's pages and the design
notes, issue 59). How (issue 35):

- Blocks are the fenced ```python, ```bash, ```console and ```yaml blocks (:func:`code_blocks`).
  A block that truly cannot run (an install, a synopsis with placeholders, the GitHub Action
  step) carries ``<!-- readme-test: skip (why) -->`` on the line just before its fence; the
  reason is required, and nothing else is skipped: an unmarked block that is neither
  Python nor ``assay`` commands fails :func:`test_every_block_runs_or_says_why_not`.
- Python blocks are executed one by one, each in its own namespace, in a temporary working
  directory holding a copy of ``examples/`` and the trace files the trace examples open
  (``anthropic_trace.json``, ``spans.json``, ``rag_spans.json``, from ``tests/fixtures/traces``).
- Bash blocks: each ``assay ...`` line runs through the real CLI (``assay.cli.app``, in
  process), in the same directory, with ``data.jsonl`` a copy of ``examples/rag.jsonl``;
  it must not exit with its command's usage-error code (README, "Exit codes").
- The judge: no block reaches a model or the network. A loopback
  :class:`~assay.testing.FakeOpenAIServer` answering with ``first_hour.word_judge`` (a
  statement is supported when its words are in the context) stands in for every judge
  the README names: ``OPENAI_BASE_URL`` points ``openai:MODEL`` (and Inspect's
  ``openai/MODEL``) at it, and ``local`` (the embedded model) is read as ``openai:fake``
  (on it) by patching the judge-string reader ``assay.models._registry._canonical``. The pytest
  example's ``test_*`` functions are called with that judge as ``assay_judge``.
- The command-line fake judge (issue 63): ``assay judges fake`` really runs, in a subprocess
  (the command as written, on a free port), and is stopped with Ctrl-C (SIGINT), which must
  exit 0. The pages' commands that point at it (``--base-url http://127.0.0.1:8765/v1``)
  are sent to one ``assay judges fake`` started for this module, on a free port.
"""

from __future__ import annotations

import gc
import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from first_hour import cli_env, word_judge

# inspect_ai's own warnings (0.3.285), as in tests/test_inspect_integration.py: the Inspect
# example runs a real eval.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*\((?P<why>[^)]+)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
USAGE_EXIT = {"gate": 3}  # every other command's usage error exits 1 (README, "Exit codes")
FAKE_URL = "http://127.0.0.1:8765/v1"  # where the pages' commands find 'assay judges fake' (its default port)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    lang: str
    line: int  # of the opening fence, 1-based
    code: str
    skip: str | None  # the reason given by a ``readme-test: skip`` marker just before it
    page: str = "README.md"  # the file's path from the repository's root

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line} ({self.lang})"


def code_blocks(path: Path, page: str = "README.md") -> list[Block]:
    """The fenced code blocks of ``path`` (named ``page``), each with the skip reason of the marker before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        before = next((lines[k] for k in range(index - 1, -1, -1) if lines[k].strip()), "")
        marker = SKIP.search(before)
        blocks.append(
            Block(opened["lang"], index + 1, "\n".join(lines[index + 1 : end]), marker["why"] if marker else None, page)
        )
        index = end + 1
    return blocks


BLOCKS = [b for path in PAGES for b in code_blocks(path, path.relative_to(ROOT).as_posix())]
RUN = [b for b in BLOCKS if b.skip is None and b.lang in ("python", "bash", "console")]


def test_every_page_is_read() -> None:
    pages = {b.page for b in BLOCKS}
    for must in ("README.md", "docs/getting-started/first-run.md", "docs/guides/rag.md", "docs/reference/formats.md"):
        assert must in pages, f"{must}: no code block found; is the page still read?"


def test_every_block_runs_or_says_why_not() -> None:
    assert len(BLOCKS) > 40
    for block in BLOCKS:
        if block.skip is not None:
            assert block.skip.strip(), f"{block.name}: a skip marker needs its reason"
            continue
        assert block.lang in ("python", "bash", "console"), f"{block.name}: mark it <!-- readme-test: skip (why) -->"
        if block.lang != "python":
            commands = [line for line in _commands(block.code)]
            assert commands and all(c[0] == "assay" for c in commands), (
                f"{block.name}: only 'assay ...' commands run here; mark it <!-- readme-test: skip (why) -->"
            )


def _commands(code: str) -> Iterator[list[str]]:
    for line in code.splitlines():
        words = shlex.split(line.removeprefix("$ "), comments=True)
        if words:
            yield words


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    pytest.importorskip("openai")
    from assay.testing import FakeOpenAIServer

    with FakeOpenAIServer(word_judge) as fake:
        yield fake.base_url


def _serve_fake(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """``assay judges fake ARGS`` in a subprocess on a port it picks (``--port 0``), once it says where it serves.

    Not a port probed free here: another worker's connection can take it before the child binds it.
    """
    args = [a for i, a in enumerate(args) if a != "--port" and (i == 0 or args[i - 1] != "--port")]
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", *args, "--port", "0"],
        cwd=cwd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    first = process.stdout.readline()
    if "serving on http://127.0.0.1:" not in first:
        process.kill()
        raise AssertionError(f"assay {' '.join(args)} did not start: {first}{process.communicate()[1]}")
    return process


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        _, err = process.communicate(timeout=10)  # reaps it and closes its pipes
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, f"Ctrl-C: exit {process.returncode}: {err}"


@pytest.fixture(scope="module")
def fake_judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of an ``assay judges fake`` (the real command) that the pages' commands are sent to."""
    process = _serve_fake(["judges", "fake"], tmp_path_factory.mktemp("fake"))
    assert process.stdout is not None
    url = process.stdout.readline().split("--base-url ")[1].strip()
    yield url
    _stop(process)


@pytest.fixture(scope="module")
def otlp_collector() -> Iterator[str]:
    """A loopback OTLP/HTTP receiver that accepts everything: where the traces guide's exports go."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Accept(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Accept)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def workdir(tmp_path: Path, server: str, otlp_collector: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory with the files the examples name, every judge pointed at the fake server.

    ``assay export --to otlp`` (the traces guide) sends to a loopback collector, through the
    standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` as the guide says.
    """
    from assay.models import _registry

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copy(ROOT / "examples" / "rag.jsonl", tmp_path / "data.jsonl")
    traces = ROOT / "tests" / "fixtures" / "traces"
    shutil.copy(traces / "anthropic.json", tmp_path / "anthropic_trace.json")
    shutil.copy(traces / "openinference.json", tmp_path / "spans.json")
    shutil.copy(traces / "rag_spans.json", tmp_path / "rag_spans.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", server)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_collector)

    canonical = _registry._canonical

    def local_is_the_fake(spec: str) -> str:
        name = canonical(spec)
        return "openai:fake" if name.split(":")[0] == "local" else name

    monkeypatch.setattr(_registry, "_canonical", local_is_the_fake)
    yield tmp_path
    gc.collect()  # inspect_ai's leaked streams, collected under this module's filter


@pytest.mark.parametrize("block", RUN, ids=[b.name for b in RUN])
def test_the_block_runs(block: Block, workdir: Path, fake_judge: str) -> None:
    if block.lang == "python":
        namespace: dict[str, Any] = {"__name__": f"doc_block_{block.line}"}
        exec(compile(block.code, block.name, "exec"), namespace)
        from assay.models import get_judge

        for name, function in list(namespace.items()):
            if name.startswith("test_") and callable(function):  # the pytest example: run its tests
                function(assay_judge=get_judge("local"))
        return
    from assay.cli import app

    for words in _commands(block.code):
        if words[1:3] == ["judges", "fake"]:  # serves until Ctrl-C: run it as a process, then stop it
            _stop(_serve_fake(words[1:], workdir))
            continue
        words = [w.replace(FAKE_URL, fake_judge) for w in words]
        result = CliRunner().invoke(app, words[1:], env={"COLUMNS": "200", "NO_COLOR": "1"})
        said = f"{' '.join(words)} exited {result.exit_code}:\n{result.output}"
        assert result.exception is None or isinstance(result.exception, SystemExit), said
        assert result.exit_code != USAGE_EXIT.get(words[1], 1), said


def test_the_extraction_sees_markers_and_languages(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n<!-- readme-test: skip (installs) -->\n```bash\npip install x\n```\n\n```python\nx = 1\n```\n"
    )
    assert code_blocks(page) == [Block("bash", 4, "pip install x", "installs"), Block("python", 8, "x = 1", None)]
    assert json.loads(json.dumps([b.lang for b in BLOCKS])).count("python") >= 8
