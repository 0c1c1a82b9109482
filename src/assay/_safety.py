"""Keeping secrets out of what assay writes, and untrusted text out of control.

One home for the two rules every output path follows:

- :func:`redact_url` strips credentials from a URL (userinfo, secret-looking query
  parameters) before it is stored, logged, used as a cache key or rendered;
- :func:`redact_secrets` masks API-key-shaped tokens in free text (error bodies).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "redact_secrets", "redact_url"]

REDACTED = "[redacted]"

_SECRET_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{4,}")
_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|auth|signature|sig|credential)", re.IGNORECASE)


def redact_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` and anything shaped like an API key masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
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
            query = urlencode(
                [(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="[]"
            )
        return redact_secrets(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))
    except ValueError:
        return redact_secrets(url)
