"""The judge-call cache: a re-run of the same evaluation makes zero judge calls.

Two rules keep it from lying (``docs/design/judging.md``, "The judge stack"):

- **The key is everything that can change an answer:** the judge's
  :attr:`~assay.models.JudgeModel.identity` (provider, base URL without credentials and
  model; the model file for a local judge), the full prompt, the output schema and the
  decoding settings, *including the repeat index*. One model name served by two servers
  is two judges, and a deliberate repeat run (``--repeats``) makes real calls while a
  plain re-run is answered from disk.
- **Only validated answers are stored.** A transport error, a refusal, a truncated answer
  (``finish_reason == "length"``), an empty one, or one that does not validate against
  the call's schema (with :func:`assay.parsing.parse_output`, the parser the callers
  use) is never cached: the next run asks again, so a run against a flaky server can
  be repaired by re-running it against a healthy one.

SQLite in WAL mode; one file per project (``.assay/cache.sqlite``), inspected and
pruned with ``assay cache info|clear``. Keys are versioned: entries written under an
older key scheme (before these rules) are never read again; ``assay cache clear``
removes them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from assay._schema import schema_json
from assay._sqlite import open_sqlite, storage_error
from assay.errors import ConfigError, StorageError
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._wrapper import JudgeWrapper
from assay.parsing import Unparsed, looks_like_refusal, parse_output

__all__ = ["CacheInfo", "CachedJudge", "JudgeCache", "cache_key", "is_cacheable"]

_KEY_VERSION = 2
"""Bumped whenever what a key covers or what may be stored changes (2: identity, validated only)."""

_SCHEMA_VERSION = 1
"""The file's layout (``PRAGMA user_version``); 0 is a file from before versions were kept."""

_DDL = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, response TEXT, created REAL, identity TEXT)"


def _migrate(db: sqlite3.Connection, found: int) -> None:
    """Files written before the key held the judge's identity lack its column."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(calls)")}
    if "identity" not in columns:
        db.execute("ALTER TABLE calls ADD COLUMN identity TEXT")


_INCOMPLETE = frozenset({"length", "refusal", "content_filter"})


def cache_key(
    identity: str, messages: Sequence[ChatMessage], schema: type[BaseModel] | None, config: GenerateConfig
) -> str:
    """The sha256 of everything that can change a judge's answer.

    Args:
        identity: The judge's :attr:`~assay.models.JudgeModel.identity` (provider,
            endpoint, model), not merely its ``model_id``.
        messages: The full prompt.
        schema: The output schema, if any.
        config: Decoding settings, the repeat index included.
    """
    payload = {
        "v": _KEY_VERSION,
        "judge": identity,
        "messages": [dict(m) for m in messages],
        "schema": schema_json(schema) if schema is not None else None,
        "config": config.model_dump(mode="json"),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def is_cacheable(response: JudgeResponse, schema: type[BaseModel] | None) -> bool:
    """Whether an answer may be cached: complete, not a refusal, and valid for ``schema``.

    Truncated (``finish_reason`` ``length``), refused and filtered answers are never
    cached, even when their text happens to parse. With a schema, the text must validate
    as the callers validate it (:func:`assay.parsing.parse_output`); without one, it must
    be non-empty and not read as a refusal.
    """
    if response.finish_reason in _INCOMPLETE:
        return False
    if schema is None:
        return bool(response.text.strip()) and not looks_like_refusal(response.text)
    return not isinstance(parse_output(response.text, schema, finish_reason=response.finish_reason), Unparsed)


@dataclass(frozen=True)
class CacheInfo:
    """What a cache file holds.

    Attributes:
        path: The SQLite file.
        size_bytes: On disk, its write-ahead log included.
        entries: Cached answers.
        per_model: Entries per judge ``model_id``, most first.
        oldest: Unix time of the oldest entry (``None`` when empty).
        newest: Unix time of the newest entry (``None`` when empty).
    """

    path: Path
    size_bytes: int
    entries: int
    per_model: Mapping[str, int]
    oldest: float | None
    newest: float | None


def _check_existing(path: Path) -> None:
    """Raise :class:`ConfigError` unless ``path`` is a judge-call cache (opened read-only)."""
    if not path.is_file():
        raise ConfigError(f"no judge-call cache at {path}; 'assay run' creates one")
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            columns = {row[1] for row in db.execute("PRAGMA table_info(calls)")}
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path} is not a judge-call cache: {exc}") from None
    if not {"key", "model", "response", "created"} <= columns:
        raise ConfigError(f"{path} is not a judge-call cache (it has no table of judge calls)")


class JudgeCache:
    """A SQLite table of validated judge answers by :func:`cache_key`.

    Args:
        path: The SQLite file.
        create: Create the file (and its directory) if missing. With ``False`` (as
            ``assay cache`` opens it), a missing file, or a file that is not a judge-call
            cache, raises :class:`~assay.errors.ConfigError` and is left untouched.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create:
            _check_existing(self.path)
        self._lock = threading.Lock()
        self._db = open_sqlite(
            self.path, what="the judge-call cache", version=_SCHEMA_VERSION, schema=[_DDL], migrate=_migrate
        )
        self.hits = 0
        self.misses = 0
        self.rejected = 0
        """Answers not stored because they were invalid, refused or truncated."""
        self.failed_writes = 0
        """Valid answers the file would not take (a full disk, a lock held too long)."""
        self.write_error: StorageError | None = None
        """The first of those failures, for the run to report once."""

    def get(self, key: str) -> JudgeResponse | None:
        """The cached answer for ``key``, if any."""
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return JudgeResponse.model_validate_json(row[0])

    def put(self, key: str, response: JudgeResponse, *, model: str | None = None, identity: str | None = None) -> None:
        """Store an answer (latency and attempts are not part of the answer).

        The caller decides whether the answer may be stored (:func:`is_cacheable`);
        :class:`CachedJudge` does.

        Args:
            key: From :func:`cache_key`.
            response: The answer.
            model: The judge's ``model_id`` (default: the model the response names), for
                ``assay cache info`` and ``clear --model``.
            identity: The judge's identity, kept for inspection.
        """
        stored = response.model_copy(update={"latency_s": 0.0, "attempts": 1, "cached": False})
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO calls (key, model, response, created, identity) VALUES (?, ?, ?, ?, ?)",
                    (key, model or response.model, stored.model_dump_json(), time.time(), identity),
                )
            except sqlite3.Error as exc:
                # The answer itself is good and is used; only the next run's saving is lost.
                # Kept (once) for the run to report, never raised into a judge call.
                self.failed_writes += 1
                if self.write_error is None:
                    self.write_error = storage_error(exc, self.path, "the judge-call cache", "write to")

    def info(self) -> CacheInfo:
        """Entries, entries per model, the oldest and newest entry, and the size on disk."""
        with self._lock:
            entries, oldest, newest = self._db.execute(
                "SELECT COUNT(*), MIN(created), MAX(created) FROM calls"
            ).fetchone()
            per_model = self._db.execute(
                "SELECT COALESCE(model, '?'), COUNT(*) FROM calls GROUP BY 1 ORDER BY 2 DESC, 1"
            ).fetchall()
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return CacheInfo(
            path=self.path,
            size_bytes=size,
            entries=int(entries),
            per_model={str(m): int(n) for m, n in per_model},
            oldest=oldest,
            newest=newest,
        )

    def clear(self, *, model: str | None = None, older_than_days: float | None = None) -> int:
        """Delete entries (all, or those of one ``model`` and/or older than N days); return how many.

        Raises:
            ConfigError: ``older_than_days`` is negative.
        """
        if older_than_days is not None and older_than_days < 0:
            raise ConfigError(f"older than must be a number of days >= 0, got {older_than_days}")
        where: list[str] = []
        params: list[object] = []
        if model is not None:
            where.append("model = ?")
            params.append(model)
        if older_than_days is not None:
            where.append("created < ?")
            params.append(time.time() - older_than_days * 86400.0)
        sql = "DELETE FROM calls" + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._lock:
            deleted = self._db.execute(sql, params).rowcount
            if deleted:  # give the space back to the file system
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._db.execute("VACUUM")
        return int(deleted)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


class CachedJudge(JudgeWrapper):
    """Answers from the cache when it can; otherwise asks the inner judge and stores a valid answer."""

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
        """A cached answer (``cached=True``), or a fresh one, cached if :func:`is_cacheable`."""
        config = config or GenerateConfig()
        identity = self.inner.identity
        key = cache_key(identity, messages, schema, config)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True})
        response = await self.inner.generate(messages, schema=schema, config=config)
        if is_cacheable(response, schema):
            self.cache.put(key, response, model=self.inner.model_id, identity=identity)
        else:
            self.cache.rejected += 1
        return response
