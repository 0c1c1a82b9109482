from __future__ import annotations

import contextlib
import os
import shutil
import socket
from collections.abc import Iterator

import pytest

END_TO_END = frozenset(
    {
        "test_action",
        "test_concurrency",
        "test_contributing_examples",
        "test_docs_site",
        "test_fake_judge",
        "test_first_hour",
        "test_first_hour_walkthrough",
        "test_hostile_content",
        "test_interrupt_grid",
        "test_judges_bench",
        "test_messages_that_misled",
        "test_phoenix_server",
        "test_pytest_plugin",
        "test_readme",
        "test_report_browser",
        "test_review_browser",
        "test_run_browser",
        "test_runner",
        "test_secrets",
        "test_store_and_cli",
    }
)
"""Files whose tests start ``assay`` processes, loopback servers or a browser, or run the docs'
code blocks: most of the suite's time without a model. ``-m "not slow and not e2e"`` leaves
them out (``make test-fast``, the inner loop); ``make test`` runs them. A single such test in
another file carries ``@pytest.mark.e2e`` itself."""


def _one_command_tree_per_typer_app() -> None:
    """``CliRunner().invoke(app, ...)`` builds the click command tree from the Typer app on every
    call, evaluating every option's annotations (about 0.1-0.2 s on a Zen 1, over a thousand
    invocations in the suite). A process running ``assay`` builds it once; so does the suite,
    once per app object. Click keeps no invocation's state in its command objects."""
    import typer.testing

    build = typer.testing._get_command
    built: dict[int, tuple[object, object]] = {}

    def get_command(app: typer.Typer) -> object:
        entry = built.get(id(app))
        if entry is None or entry[0] is not app:
            entry = built[id(app)] = (app, build(app))
        return entry[1]

    typer.testing._get_command = get_command  # type: ignore[assignment]


_one_command_tree_per_typer_app()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in END_TO_END:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True, scope="session")
def _instruction_cells_in_a_scratch_directory(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The local judge keeps instruction cells on disk; tests keep theirs out of the user's cache.

    The scratch directory starts with copies of the cells ``make install`` kept (``assay model
    prepare --load``: the default model reading the default metric's instructions), as a user's
    runs do: reading them cold took 44 s of the first default-judge test on a Zen 1. A copy
    that does not match its key or digest is refused and recomputed, as in a run;
    tests/test_instruction_cache.py tests the cold path in directories of its own.
    """
    if "ASSAY_LOCAL_INSTRUCTION_CACHE" in os.environ:
        yield
        return
    from assay.models._instructions import instructions_dir

    kept = instructions_dir()  # the user's, read before the variable points elsewhere; never written
    scratch = tmp_path_factory.mktemp("instructions")
    if kept is not None and kept.is_dir():
        budget = 256 * 2**20
        found = []
        for path in kept.glob("*.kv"):  # another process may be pruning it: a file gone is not copied
            with contextlib.suppress(OSError):
                stat = path.stat()
                found.append((stat.st_mtime, stat.st_size, path))
        for _, size, path in sorted(found, reverse=True):  # the newest first
            if size <= budget:
                with contextlib.suppress(OSError):
                    shutil.copyfile(path, scratch / path.name)
                    budget -= size
    os.environ["ASSAY_LOCAL_INSTRUCTION_CACHE"] = str(scratch)
    yield
    del os.environ["ASSAY_LOCAL_INSTRUCTION_CACHE"]


@pytest.fixture
def refused_url() -> Iterator[str]:
    """An OpenAI-style base URL on a loopback port that is bound and never listened on.

    A connection to it is refused, and while the test holds it no other test can take the
    port: a port freed by closing a server or a socket could be taken by a parallel worker's
    server, which then answered the calls meant to fail (a flaky failure seen under ``-n 2``).
    """
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach the network: only loopback connections are allowed."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("/"):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ASSAY_JUDGE", raising=False)


@pytest.fixture(autouse=True)
def _no_reasks_by_default(request: pytest.FixtureRequest) -> object:
    """Unit tests script one answer per call; re-asking has its own tests (marked ``reasks``).

    The library default is one re-ask per invalid answer; see ``assay.prompts.REASKS``.
    """
    from assay.prompts import REASKS

    if request.node.get_closest_marker("reasks"):
        yield
        return
    token = REASKS.set(0)
    yield
    REASKS.reset(token)
