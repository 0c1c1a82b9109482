"""A loopback address that refuses connections, for tests of a judge server that is not running."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


@contextlib.contextmanager
def refused_base_url() -> Iterator[str]:
    """An OpenAI-style base URL on a loopback port that is bound and never listened on.

    A connection to it is refused, and while the test holds it no other test can take the
    port. A port freed by closing a server or a socket could be taken by a parallel worker's
    server, which then answered the calls meant to fail (a flaky failure seen under
    ``-n 2``).
    """
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"
