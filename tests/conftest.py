from __future__ import annotations

import os
import socket

import pytest


@pytest.fixture(autouse=True, scope="session")
def _instruction_cells_in_a_scratch_directory(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The local judge keeps instruction cells on disk; tests keep theirs out of the user's cache."""
    if "ASSAY_LOCAL_INSTRUCTION_CACHE" in os.environ:
        yield
        return
    os.environ["ASSAY_LOCAL_INSTRUCTION_CACHE"] = str(tmp_path_factory.mktemp("instructions"))
    yield
    del os.environ["ASSAY_LOCAL_INSTRUCTION_CACHE"]


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
