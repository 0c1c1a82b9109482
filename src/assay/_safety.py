"""Keeping secrets out of what assay writes, and untrusted text out of control.

One home for the two rules every output path follows:

- :func:`redact_url` strips credentials from a URL (userinfo, secret-looking query
  parameters) before it is stored, logged, used as a cache key or rendered;
- :func:`redact_secrets` masks API-key-shaped tokens in free text (error bodies);
- :func:`printable` makes untrusted text safe to print on a terminal: control characters
  (ESC sequences that retitle the window, clear the screen or hide text), DEL, C1 codes
  and bidi overrides are shown as visible escapes, and rich markup is escaped.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

from rich.markup import escape as _escape_markup

__all__ = ["REDACTED", "printable", "redact_secrets", "redact_url", "scrub", "url_secrets"]

REDACTED = "[redacted]"

_SECRET_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{4,}")
# A server echoing the Authorization header it got ("Incorrect API key provided: Basic dXNl...").
_AUTH_HEADER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9+/=_~\-]{8,}(?:\.[A-Za-z0-9+/=_~\-]+)*")
_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|auth|signature|sig|credential)", re.IGNORECASE)


def redact_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets``, anything shaped like an API key and echoed auth headers masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _AUTH_HEADER.sub(r"\1 " + REDACTED, text)
    return _SECRET_LIKE.sub(r"\1..." + REDACTED, text)


def redact_url(url: str | None) -> str | None:
    """``url`` without credentials: userinfo and secret-looking query parameters masked.

    ``https://user:sk-abc@host/v1?api_key=x&region=eu`` becomes
    ``https://[redacted]@host/v1?api_key=[redacted]&region=eu``. ``None`` stays ``None``;
    text that does not parse as a URL is returned with key-shaped tokens masked.
    """
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="[]")
        return redact_secrets(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))
    except ValueError:
        return redact_secrets(url)


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials inside ``url``, as written and percent-decoded: for :func:`redact_secrets`.

    A server may echo them back (a 404 naming the path and query it got, a client error
    quoting the URL); passing them to :func:`redact_secrets` masks them in such text.
    ``https://user:pw@host/?api_key=k`` gives ``("user:pw", "pw", "k")`` (and the
    base64 of ``user:pw``, which an HTTP client sends as basic auth); a bare
    ``https://token@host`` gives ``("token",)`` and its basic-auth form.
    """
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        found: list[str] = []
        userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
        if userinfo:
            user, colon, password = userinfo.partition(":")
            found += [userinfo, password] if colon else [user]
        for _, raw in _raw_params(parts.query):
            found.append(raw)
    except ValueError:
        return ()
    decoded = [unquote_plus(s) for s in found]
    if userinfo:
        user, _, password = unquote_plus(userinfo).partition(":")
        decoded.append(base64.b64encode(f"{user}:{password}".encode()).decode())
    return tuple(dict.fromkeys(s for s in found + decoded if s))


def scrub(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` with every occurrence of each of ``secrets`` replaced by :data:`REDACTED`.

    Walks strings inside dicts (keys too), lists and tuples; other values are returned as
    they are. For records stored before their run's URL was redacted, which may hold a
    server's echo of a credential: pass :func:`url_secrets` of the stored URL. Unlike
    :func:`redact_secrets`, nothing is masked by its shape, so data is left alone.
    """
    secrets = [s for s in secrets if s]
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub(v, secrets) for v in value)
    return value


def _raw_params(query: str) -> list[tuple[str, str]]:
    """``(name, value)`` of each secret-looking query parameter, values as written."""
    pairs = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if value and _SECRET_PARAM.search(unquote_plus(name)):
            pairs.append((name, value))
    return pairs


# C0 controls but tab and newline, DEL, C1 controls, and the invisible direction marks and
# overrides (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069) that reorder what a reader sees.
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNPRINTABLE = re.compile(f"[{_CONTROL}]")
_UNPRINTABLE_OR_BREAK = re.compile(f"[\t\n{_CONTROL}]")


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def printable(text: object, *, markup: bool = True, breaks: bool = True) -> str:
    r"""``text`` made safe to print on a terminal: every control character visible.

    The one sanitiser for untrusted text (ids, answers, reasons, dataset names, error
    messages) on its way to a terminal. ESC (``\x1b``), the other C0 controls, DEL, the
    C1 controls and the bidi marks and overrides become visible escapes such as ``\x1b``
    and ``\u202e``, so ``"\x1b]0;pwned\x07"`` cannot retitle the window, ``"\x1b[2J"``
    cannot clear the screen and ``"\x1b[8m"`` cannot hide what follows.

    Args:
        text: Anything; non-strings are printed with ``str()``.
        markup: Also escape rich markup (``[red]``), for text printed through a rich
            console or table. ``False`` for plain-text sinks (``typer.echo``, assertion
            messages).
        breaks: Keep newlines and tabs (a table cell that lists several lines);
            ``False`` shows them as ``\n`` and ``\t`` too, for one-line fields.

    Returns:
        Text without any raw control character (other than newline and tab when
        ``breaks``).
    """
    shown = (_UNPRINTABLE if breaks else _UNPRINTABLE_OR_BREAK).sub(_visible, str(text))
    return _escape_markup(shown) if markup else shown
