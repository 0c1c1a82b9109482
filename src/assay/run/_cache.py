"""The judge-call cache: a re-run of the same evaluation makes zero judge calls.

Keyed by the judge's model id, the full prompt, the output schema and the decoding
settings, *including the repeat index*, so a deliberate repeat run (``--repeats``) makes
real calls while a plain re-run is answered from disk. Only answers are cached, never
transport errors. SQLite in WAL mode; one file per project (``.assay/cache.sqlite``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from assay._schema import schema_json
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._wrapper import JudgeWrapper

__all__ = ["CachedJudge", "JudgeCache", "cache_key"]

_SCHEMA_VERSION = 1


def cache_key(
    model_id: str, messages: Sequence[ChatMessage], schema: type[BaseModel] | None, config: GenerateConfig
) -> str:
    """The sha256 of everything that can change a judge's answer."""
    payload = {
        "v": _SCHEMA_VERSION,
        "model": model_id,
        "messages": [dict(m) for m in messages],
        "schema": schema_json(schema) if schema is not None else None,
        "config": config.model_dump(mode="json"),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class JudgeCache:
    """A SQLite table of judge answers by :func:`cache_key`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, response TEXT, created REAL)"
        )
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> JudgeResponse | None:
        """The cached answer for ``key``, if any."""
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return JudgeResponse.model_validate_json(row[0])

    def put(self, key: str, response: JudgeResponse) -> None:
        """Store an answer (latency and attempts are not part of the answer)."""
        stored = response.model_copy(update={"latency_s": 0.0, "attempts": 1, "cached": False})
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls (key, model, response, created) VALUES (?, ?, ?, ?)",
                (key, response.model, stored.model_dump_json(), time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


class CachedJudge(JudgeWrapper):
    """Answers from the cache when it can; otherwise asks the inner judge and stores the answer."""

    def __init__(self, inner: JudgeModel, cache: JudgeCache) -> None:
        super().__init__(inner)
        self.cache = cache

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """A cached answer (``cached=True``), or a fresh one that is then cached."""
        config = config or GenerateConfig()
        key = cache_key(self.inner.model_id, messages, schema, config)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True})
        response = await self.inner.generate(messages, schema=schema, config=config)
        self.cache.put(key, response)
        return response
