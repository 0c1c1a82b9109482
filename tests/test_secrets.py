"""No credential leaks into anything assay writes or prints (assay issue 14, secrets test).

Sentinel credentials sit where users put them: the API key in ``OPENAI_API_KEY``, a
password in ``--base-url``'s userinfo (``https://user:pw@host/v1``) and a key in its query
(``?api_key=...``, which cannot work and is refused, redacted, before any call). The
loopback fake server echoes what it got, as real servers do: a 401 repeats the
``Authorization`` header (bearer key, or the base64 basic-auth pair the HTTP client builds
from userinfo). The real CLI runs in a
subprocess: failing runs, then a healthy one, then ``runs list/show/export``, ``report``
and ``gate``. No sentinel (nor its base64 form) may appear in any file under the project
directory (the run store and its -wal/-shm, the cache and its WAL, ``--out``, the report,
the exports) or in any command's stdout or stderr.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

ENV_KEY = "sk-envSENTINEL-7f3a9c1e5b2d4f60"
USER, PASSWORD = "alice", "uiSENTINEL-4d2b8e61"
QUERY_KEY = "qpSENTINEL-9c7a1f03"
SENTINELS = {
    "env key": ENV_KEY,
    "env key tail": ENV_KEY[-16:],  # redact_secrets keeps "sk-" and 4 characters; never the rest
    "userinfo password": PASSWORD,
    "userinfo as basic auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
    "query key": QUERY_KEY,
}


def responder(body: dict[str, object]) -> str:
    """Statements are the answer's sentences; a statement about the sky is supported."""
    user = str(body["messages"][-1]["content"])  # type: ignore[index]
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    statements = [item.split("] ", 1)[1] for item in items]
    verdicts = [{"statement": s, "reason": "stated" if "sky" in s else "not stated", "verdict": int("sky" in s)}
                for s in statements]  # fmt: skip
    return json.dumps({"verdicts": verdicts})


def leaks(text: str | bytes) -> list[str]:
    """The names of the sentinels found in ``text``."""
    data = text.encode() if isinstance(text, str) else text
    return [name for name, secret in SENTINELS.items() if secret.encode() in data]


class CLI:
    """Runs ``python -m assay`` in ``root`` and keeps every command's output."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.outputs: list[tuple[str, str]] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "ASSAY_"))}
        self.env.update({"OPENAI_API_KEY": ENV_KEY, "COLUMNS": "200", "NO_COLOR": "1"})

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "assay", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.outputs.append((" ".join(args), done.stdout + done.stderr))
        return done


def test_no_credential_reaches_a_file_or_the_terminal(tmp_path: Path) -> None:
    rows = [
        {"id": f"r{i}", "answer": f"The sky is blue. Row {i} is here.", "contexts": ["The sky is blue."]}
        for i in range(6)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli = CLI(tmp_path)
    run_ids: list[str] = []

    def run(base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
        done = cli("run", "data.jsonl", "--judge", "openai:fake", "--base-url", base_url, "--retries", "0", *extra)
        found = re.search(r"\b(\d{8}-\d{6}-[0-9a-f]{4})\b", done.stdout + done.stderr)
        assert found is not None, done.stdout + done.stderr
        run_ids.append(found.group(1))
        return done

    with FakeOpenAIServer(responder) as server:
        root = server.base_url.removesuffix("/v1")
        with_userinfo = root.replace("http://", f"http://{USER}:{PASSWORD}@") + "/v1"
        # 1. A key in the query: the SDK would append its path after the query (every call a
        #    404), so the URL is refused before any call, redacted.
        query_url = f"{server.base_url}?api_key={QUERY_KEY}"
        refused = cli("run", "data.jsonl", "--judge", "openai:fake", "--base-url", query_url)
        assert refused.returncode == 1 and "api_key=[redacted] has a query string" in refused.stderr, refused.stderr
        assert server.calls == 0
        # 2. The key from the environment, refused by half of the calls (the 401 echoes it).
        server.faults = {"401": 0.5}
        run(server.base_url, "--no-cache")
        # 3. A password in the URL: sent as basic auth, echoed base64-encoded by the 401s.
        run(with_userinfo, "--no-cache")
        assert server.fault_counts["401"] > 0
        # 4. Healthy, with the password still in the URL, into --out.
        server.faults = {}
        healthy = run(with_userinfo, "--out", "out.jsonl")
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert len(set(run_ids)) == 3

    cli("runs", "list")
    for run_id in run_ids:
        assert cli("runs", "show", run_id).returncode == 0
        assert cli("runs", "export", run_id, "--out", f"{run_id}.jsonl").returncode == 0
        cli("gate", run_id)
    assert cli("runs", "export", run_ids[0]).returncode == 0  # to stdout
    assert cli("runs", "export", run_ids[1], "--format", "csv", "--out", "export.csv").returncode == 0
    assert cli("report", run_ids[0], "--out", "report.html").returncode == 0
    assert cli("report", run_ids[2], "--compare", run_ids[0], "--out", "compare.html").returncode == 0

    written = sorted(p for p in tmp_path.rglob("*") if p.is_file() and p.name != "data.jsonl")
    names = {p.name for p in written}
    assert {"runs.sqlite", "cache.sqlite", "out.jsonl", "compare.html"} <= names, names
    leaked = {str(p.relative_to(tmp_path)): found for p in written if (found := leaks(p.read_bytes()))}
    assert leaked == {}, f"credentials in files assay wrote: {leaked}"
    printed = {command: found for command, out in cli.outputs if (found := leaks(out))}
    assert printed == {}, f"credentials printed: {printed}"
    # The failures were stored with the servers' echoes masked: evidence that the echoes
    # reached assay and were redacted, not that nothing was echoed.
    exported = [(tmp_path / f"{run_id}.jsonl").read_text() for run_id in run_ids]
    assert "Incorrect API key provided: [redacted]" in exported[0]
    assert "Incorrect API key provided: Basic [redacted]" in exported[1]


def test_url_credentials_and_echoed_auth_headers_are_masked_in_free_text() -> None:
    from assay._safety import redact_secrets, url_secrets
    from assay.models._http import host_of

    url = f"https://{USER}:{PASSWORD}@api.example.com/v1?region=eu&api_key={QUERY_KEY}"
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    echo = f"Unknown path /v1?api_key={QUERY_KEY}; got Basic {basic} from {USER}:{PASSWORD}"
    masked = redact_secrets(echo, *url_secrets(url))
    assert leaks(masked) == [] and "region" not in masked and "Unknown path /v1?api_key=[redacted]" in masked
    assert redact_secrets(f"Incorrect API key provided: Bearer {ENV_KEY[3:]}.") == (
        "Incorrect API key provided: Bearer [redacted]."
    )
    assert url_secrets("https://api.example.com/v1?region=eu") == ()
    # A URL without a scheme has no host to name: the message names it whole, masked.
    assert leaks(host_of(f"{USER}:{PASSWORD}@127.0.0.1:8080/v1?api_key={QUERY_KEY}")) == []
    assert host_of(url) == "api.example.com"


def test_a_run_stored_before_urls_were_redacted_never_shows_its_credentials(tmp_path: Path) -> None:
    """Render-time redaction: the stored URL and the servers' echoes of it stay masked."""
    from typer.testing import CliRunner

    from assay import Sample, Score, Verdict
    from assay.cli import app
    from assay.run import RunSpec, RunStore, SampleResult

    url = f"http://{USER}:{PASSWORD}@127.0.0.1:9/v1?api_key={QUERY_KEY}"
    with RunStore(tmp_path / "old.sqlite") as store:
        store.create(RunSpec(run_id="old", judge="openai:fake", judge_model="openai:fake", base_url=url))
        echo = f"HTTP 404: Unknown path /v1?api_key={QUERY_KEY}chat/completions (user {USER}:{PASSWORD})"
        failing = Verdict(subject="Grass is red.", value=0, reason=f"the server said {PASSWORD}")
        scores = {"faithfulness": Score.scored("faithfulness", 0.0, verdicts=[failing])}
        store.record("old", SampleResult(Sample(id="a", answer="Grass is red.", contexts=("x",)), scores, line=1))
        unscored = {"faithfulness": Score.unscored("faithfulness", "judge_error", echo)}
        store.record("old", SampleResult(Sample(id="b", answer="y", contexts=("x",)), unscored, line=2))
        store.set_status("old", "finished")
    where = ["--store", str(tmp_path / "old.sqlite")]
    outputs = {}
    for command in (
        ["runs", "show", "old", *where],
        ["runs", "list", *where],
        ["runs", "export", "old", *where],
        ["runs", "export", "old", "--format", "csv", *where],
        ["runs", "export", "old", "--out", str(tmp_path / "old.jsonl"), *where],
        ["gate", "old", "--per-sample", "--max-unscored", "1", *where],
        ["report", "old", "--out", str(tmp_path / "old.html"), *where],
    ):
        result = CliRunner().invoke(app, command, env={"COLUMNS": "300"})
        # the gate refuses the run's judge_error (exit 2): what matters here is what it prints
        assert result.exit_code in ((0, 1, 2) if command[0] == "gate" else (0, 1)), result.output
        outputs[" ".join(command[: command.index("--store")])] = result.output
    assert "127.0.0.1:9" in outputs["runs show old"] and "[redacted]" in outputs["runs show old"]
    assert "Unknown path /v1?api_key=[redacted]chat/completions" in outputs["runs export old"]
    printed = {command: found for command, out in outputs.items() if (found := leaks(out))}
    assert printed == {}, printed
    written = {name: found for name in ("old.jsonl", "old.html") if (found := leaks((tmp_path / name).read_bytes()))}
    assert written == {}, written
