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

The same file keeps each whole score whose every judge answer it holds (``scores``): a
re-run finds the score without decomposing the answer or rendering a prompt again.
:mod:`assay.run._memo` keys it by everything that made it (the code, the metric, the
judge, the sample, the repeat); the cache only lends it :func:`collecting_calls`, which
lists the answers a score was built from, and keeps a score only while every one of
them is still here (``assay cache clear`` of a judge's answers clears its scores too).

SQLite in WAL mode; one file per project (``.assay/cache.sqlite``), inspected and
pruned with ``assay cache info|clear``. Keys are versioned: entries written under an
older key scheme (before these rules) are never read again; ``assay cache clear``
removes them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay._schema import schema_json
from assay._scores import Score, Usage
from assay._sqlite import open_sqlite, storage_error
from assay.errors import ConfigError, StorageError
from assay.models._protocol import ChatMessage, ChoiceProbabilities, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._wrapper import JudgeWrapper
from assay.parsing import Unparsed, looks_like_refusal, parse_output

_A = TypeVar("_A")

__all__ = ["CacheInfo", "CachedJudge", "CallKeys", "JudgeCache", "cache_key", "collecting_calls", "is_cacheable"]

_KEY_VERSION = 2
"""Bumped whenever what a key covers or what may be stored changes (2: identity, validated only)."""

_SCHEMA_VERSION = 2
"""The file's layout (``PRAGMA user_version``); 0 is a file from before versions were kept; 2 adds ``scores``."""

_DDL = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, response TEXT, created REAL, identity TEXT)"
_SCORES_DDL = (
    "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, model TEXT, score TEXT, calls TEXT, created REAL)"
)


def _migrate(db: sqlite3.Connection, found: int) -> None:
    """Files written before the key held the judge's identity lack its column."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(calls)")}
    if "identity" not in columns:
        db.execute("ALTER TABLE calls ADD COLUMN identity TEXT")


_INCOMPLETE = frozenset({"length", "refusal", "content_filter"})

_KEPT_SCORE = (
    "SELECT score, json_array_length(calls), "
    "(SELECT COUNT(*) FROM calls WHERE calls.key IN (SELECT value FROM json_each(scores.calls))) "
    "FROM scores WHERE key = ?"
)
"""A kept score, how many answers it was built from (distinct keys) and how many of them are still here."""


def _replayed(score: Score) -> Score:
    """``score`` with every call (its parts' too) ``cached``, with no latency and one attempt."""
    calls = tuple(c.model_copy(update={"cached": True, "latency_s": 0.0, "attempts": 1}) for c in score.calls)
    return score.model_copy(update={"calls": calls, "parts": tuple(_replayed(p) for p in score.parts)})


@dataclass
class CallKeys:
    """The cache keys of the answers one score was built from, and whether every answer is in the cache.

    ``complete`` turns false when an answer was not stored (invalid, refused, truncated, a
    write that failed, a probability made of calls of its own) or when a call failed: such
    a score must be computed again.
    """

    keys: list[str] = field(default_factory=list)
    complete: bool = True


_COLLECTING: ContextVar[CallKeys | None] = ContextVar("assay_call_keys", default=None)


@contextlib.contextmanager
def collecting_calls() -> Iterator[CallKeys]:
    """List the cached answers of the calls made inside (tasks started inside report to the same list)."""
    keys = CallKeys()
    token = _COLLECTING.set(keys)
    try:
        yield keys
    finally:
        _COLLECTING.reset(token)


def cache_key(
    identity: str,
    messages: Sequence[ChatMessage],
    schema: type[BaseModel] | None,
    config: GenerateConfig,
    *,
    ask: Mapping[str, object] | None = None,
) -> str:
    """The sha256 of everything that can change a judge's answer.

    Args:
        identity: The judge's :attr:`~assay.models.JudgeModel.identity` (provider,
            endpoint, model), not merely its ``model_id``.
        messages: The full prompt.
        schema: The output schema, if any.
        config: Decoding settings, the repeat index included.
        ask: What else the call asks beside a generated answer (a choice's prefix and
            choices, a string's prefix and length cap); ``None`` for ``generate``.
    """
    payload: dict[str, object] = {
        "v": _KEY_VERSION,
        "judge": identity,
        "messages": [dict(m) for m in messages],
        "schema": schema_json(schema) if schema is not None else None,
        "config": config.model_dump(mode="json"),
    }
    if ask is not None:
        payload["ask"] = dict(ask)
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
        scores: Whole scores kept beside the answers they were built from.
    """

    path: Path
    size_bytes: int
    entries: int
    per_model: Mapping[str, int]
    oldest: float | None
    newest: float | None
    scores: int = 0


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
            self.path,
            what="the judge-call cache",
            version=_SCHEMA_VERSION,
            schema=[_DDL, _SCORES_DDL],
            migrate=_migrate,
        )
        self.hits = 0
        self.misses = 0
        self.score_hits = 0
        """Scores found whole (:meth:`get_score`): no answer decomposed, no prompt rendered."""
        self.rejected = 0
        """Answers not stored because they were invalid, refused or truncated."""
        self.failed_writes = 0
        """Valid answers the file would not take (a full disk, a lock held too long)."""
        self.write_error: StorageError | None = None
        """The first of those failures, for the run to report once."""

    def get(self, key: str) -> JudgeResponse | None:
        """The cached answer for ``key``, if any.

        A record that no longer reads as an answer (damaged) is a miss, as a damaged kept
        score is: the caller asks the judge again and keeps the answer anew.
        """
        return self.counted(self.record(key))

    def record(self, key: str) -> JudgeResponse | None:
        """The answer kept under ``key``, uncounted: ``None`` when there is none or it is damaged."""
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return JudgeResponse.model_validate_json(row[0])
        except ValueError:
            return None

    def counted(self, found: _A) -> _A:
        """``found``, counted in :attr:`hits` when it is an answer, else in :attr:`misses`."""
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: str, response: JudgeResponse, *, model: str | None = None, identity: str | None = None) -> bool:
        """Store an answer (latency and attempts are not part of the answer).

        The caller decides whether the answer may be stored (:func:`is_cacheable`);
        :class:`CachedJudge` does.

        Args:
            key: From :func:`cache_key`.
            response: The answer.
            model: The judge's ``model_id`` (default: the model the response names), for
                ``assay cache info`` and ``clear --model``.
            identity: The judge's identity, kept for inspection.

        Returns:
            Whether the file took it.
        """
        stored = response.model_copy(update={"latency_s": 0.0, "attempts": 1, "cached": False})
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO calls (key, model, response, created, identity) VALUES (?, ?, ?, ?, ?)",
                    (key, model or response.model, stored.model_dump_json(), time.time(), identity),
                )
            except sqlite3.Error as exc:
                self._write_failed(exc)
                return False
        return True

    def _write_failed(self, exc: sqlite3.Error) -> None:
        """A write the file would not take: the value itself is good and is used; only the next run's saving is lost.

        Counted, and the first kept for the run to report once; never raised into a judge call.
        """
        self.failed_writes += 1
        if self.write_error is None:
            self.write_error = storage_error(exc, self.path, "the judge-call cache", "write to")

    def get_score(self, key: str) -> Score | None:
        """The kept score for ``key``, if every judge answer it was built from is still here.

        A record that no longer reads as a score (damaged) is a miss: the caller computes
        the score again and keeps it anew.
        """
        with self._lock:
            row = self._db.execute(_KEPT_SCORE, (key,)).fetchone()
        if row is None or row[1] != row[2]:
            return None
        try:
            score = Score.model_validate_json(row[0])
        except ValueError:
            return None
        self.score_hits += 1
        return score

    def put_score(self, key: str, score: Score, calls: Sequence[str], *, model: str | None = None) -> None:
        """Keep ``score`` under ``key`` with the keys of the answers it was built from.

        It is stored as a re-run answered from this cache would build it: every call
        ``cached``, none waited for or retried (as :meth:`put` stores an answer without its
        latency and attempts).
        """
        record = _replayed(score).model_dump_json()
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO scores (key, model, score, calls, created) VALUES (?, ?, ?, ?, ?)",
                    (key, model, record, json.dumps(sorted(set(calls))), time.time()),
                )
            except sqlite3.Error as exc:
                self._write_failed(exc)

    def info(self) -> CacheInfo:
        """Entries, entries per model, the oldest and newest entry, and the size on disk."""
        with self._lock:
            entries, oldest, newest = self._db.execute(
                "SELECT COUNT(*), MIN(created), MAX(created) FROM calls"
            ).fetchone()
            per_model = self._db.execute(
                "SELECT COALESCE(model, '?'), COUNT(*) FROM calls GROUP BY 1 ORDER BY 2 DESC, 1"
            ).fetchall()
            scores = self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return CacheInfo(
            path=self.path,
            size_bytes=size,
            entries=int(entries),
            per_model={str(m): int(n) for m, n in per_model},
            oldest=oldest,
            newest=newest,
            scores=int(scores),
        )

    def clear(self, *, model: str | None = None, older_than_days: float | None = None) -> int:
        """Delete entries (all, or those of one ``model`` and/or older than N days); return how many.

        The whole scores of the same judge and age go with them (and any score whose
        answers are gone is never read again).

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
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        with self._lock:
            deleted = self._db.execute("DELETE FROM calls" + condition, params).rowcount
            self._db.execute("DELETE FROM scores" + condition, params)
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

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedJudge(JudgeWrapper):
    """Answers from the cache when it can; otherwise asks the inner judge and stores a valid answer.

    Besides answers it keeps what a judge that reads its own logits returns: a choice's
    probabilities (``choice_probabilities``, stored as JSON under a key that adds the prefix
    and the choices) and a string's continuation (``complete_string``, the prefix and the
    length cap), so a re-run on the local judge asks it nothing. A probability built from
    calls of its own (``exchanges``: an API judge's log-probabilities or samples) is kept
    by those calls, not as a whole.
    """

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
        return await self._answer(
            messages, schema, config, None, lambda: self.inner.generate(messages, schema=schema, config=config)
        )

    def _capability(self, name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        if name == "choice_probabilities":
            return functools.partial(self._choice_probabilities, method)
        return functools.partial(self._complete_string, method)

    async def _choice_probabilities(
        self,
        ask: Callable[..., Awaitable[Any]],
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> Any:
        config = config or GenerateConfig()
        identity = self.inner.identity
        key = cache_key(identity, messages, None, config, ask={"prefix": prefix, "choices": list(choices)})

        def stored(probs: Any) -> JudgeResponse | bool | None:
            if getattr(probs, "exchanges", ()):
                return False  # built from calls of its own, each kept (or not) under its own key
            if set(probs) != set(choices) or not all(_probability(probs[c]) for c in choices):
                return None
            text = json.dumps({"p": {c: float(probs[c]) for c in choices}, "how": getattr(probs, "how", "")})
            usage = getattr(probs, "usage", None) or Usage()
            return JudgeResponse(text=text, model=self.inner.model_id, usage=usage, finish_reason="stop")

        def read(hit: JudgeResponse) -> ChoiceProbabilities | None:
            try:
                kept = json.loads(hit.text)
                probabilities = {c: float(kept["p"][c]) for c in choices}
                how = str(kept.get("how", ""))
            except (ValueError, TypeError, KeyError):
                return None  # not what this kind of call stores: asked again
            return ChoiceProbabilities(probabilities, hit.usage, how=how, cached=True)

        return await self._through(
            key, identity, lambda: ask(messages, prefix=prefix, choices=choices, config=config), stored, read
        )

    async def _complete_string(
        self,
        ask: Callable[..., Awaitable[JudgeResponse]],
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        max_chars: int = 200,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        config = config or GenerateConfig()
        asked = {"prefix": prefix, "max_chars": max_chars}
        return await self._answer(
            messages, None, config, asked, lambda: ask(messages, prefix=prefix, max_chars=max_chars, config=config)
        )

    async def _answer(
        self,
        messages: Sequence[ChatMessage],
        schema: type[BaseModel] | None,
        config: GenerateConfig,
        asked: Mapping[str, object] | None,
        ask: Callable[[], Awaitable[JudgeResponse]],
    ) -> JudgeResponse:
        """A text answer (generated, or a string continued after ``asked``'s prefix) through the cache."""
        identity = self.inner.identity
        key = cache_key(identity, messages, schema, config, ask=asked)
        return await self._through(
            key,
            identity,
            ask,
            lambda response: response if is_cacheable(response, schema) else None,
            lambda hit: hit.model_copy(update={"cached": True}),
        )

    async def _through(
        self,
        key: str,
        identity: str,
        ask: Callable[[], Awaitable[_A]],
        stored: Callable[[_A], JudgeResponse | bool | None],
        read: Callable[[JudgeResponse], _A | None],
    ) -> _A:
        """The answer kept under ``key``, else ``ask()``'s, kept when ``stored`` gives what to keep.

        ``stored`` returns the record to keep, ``None`` for an answer that may not be kept
        (invalid, refused, truncated: counted in :attr:`JudgeCache.rejected`) or ``False``
        for one kept elsewhere. ``read`` turns a record back into an answer, ``None`` when it
        cannot (then the judge is asked). Every key found or stored is listed for
        :func:`collecting_calls`; anything else makes the score being collected incomplete.
        """
        collecting = _COLLECTING.get()
        # A record found but not readable as this answer (a damaged one) is a miss, not a hit.
        found = self.cache.record(key)
        answer = self.cache.counted(read(found) if found is not None else None)
        if answer is not None:
            if collecting is not None:
                collecting.keys.append(key)
            return answer
        try:
            fresh = await ask()
        except BaseException:
            if collecting is not None:  # a failed call: the score it was for cannot be kept
                collecting.complete = False
            raise
        record = stored(fresh)
        kept = False
        if isinstance(record, JudgeResponse):
            kept = self.cache.put(key, record, model=self.inner.model_id, identity=identity)
        elif record is None:
            self.cache.rejected += 1
        if collecting is not None:
            if kept:
                collecting.keys.append(key)
            else:
                collecting.complete = False
        return fresh


def _probability(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0
