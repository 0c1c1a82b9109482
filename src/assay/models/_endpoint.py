"""One endpoint, one spelling: the base URL as a judge's identity holds it.

``http://localhost:8000/v1``, ``http://127.0.0.1:8000/v1``, ``HTTP://LocalHost:80``-style
variants and ``http://localhost:8000/v1/`` reach the same server, so they are one judge
for the call cache and for calibrations. :func:`canonical_url` is the one place that says
so; an HTTP judge's :attr:`~assay.models.JudgeModel.identity` is built with it, and
:func:`canonical_identity` re-spells identities stored before it was (run records, the
calibrations table).

What is the same endpoint:

- the scheme and the host in any case (both are case-insensitive);
- ``localhost``, ``127.0.0.1`` and ``::1`` (the loopback names a client resolves
  ``localhost`` to): all spelled ``localhost``;
- the scheme's default port written out or not (``:80`` for http, ``:443`` for https);
- the path with or without trailing slashes; a fragment (never sent).

What is not: another port, another host (``127.0.0.2`` is another loopback address a
second server can bind), another path, another scheme, another query. Credentials in the
URL are never part of it (masked as in :func:`assay._safety.redact_url`).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from assay._safety import REDACTED, redact_url

__all__ = ["canonical_identity", "canonical_url"]

_LOOPBACK = frozenset({"localhost", "localhost.", "127.0.0.1", "::1", "0:0:0:0:0:0:0:1"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_URL_IN_IDENTITY = re.compile(r"@([A-Za-z][A-Za-z0-9+.-]*://.*)$")


def canonical_url(url: str) -> str:
    """``url`` spelled as a judge's identity holds it (see the module docstring), without credentials.

    Text that does not parse as ``scheme://host...`` comes back without trailing slashes
    and with credentials masked.
    """
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep or not scheme:
        return (redact_url(text) or "").rstrip("/")
    scheme = scheme.lower()
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    userinfo, at, hostport = netloc.rpartition("@")
    try:
        parts = urlsplit("//" + hostport)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:  # not a host[:port] we can read: keep it as written
        return (redact_url(text) or "").rstrip("/")
    if host in _LOOPBACK:
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"  # an IPv6 address, bracketed again
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    tail = tail.partition("#")[0]
    path, qmark, query = tail.partition("?")
    path = path.rstrip("/")
    plain = f"{scheme}://{host}{path}{qmark}{query}"
    masked = redact_url(plain) or plain  # secret-looking query parameters
    if at and userinfo:
        masked = f"{scheme}://{REDACTED}@{masked.partition('://')[2]}"
    return masked


def canonical_identity(identity: str) -> str:
    """A judge identity with its endpoint (the ``@scheme://...`` tail, if any) spelled by :func:`canonical_url`.

    ``openai:m@http://127.0.0.1:8000/v1/`` becomes ``openai:m@http://localhost:8000/v1``;
    an identity without a URL (``local:sha256:...@0.3.36``) is returned unchanged.
    """
    found = _URL_IN_IDENTITY.search(identity)
    if found is None:
        return identity
    return identity[: found.start(1)] + canonical_url(found.group(1))
