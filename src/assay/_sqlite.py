"""The one way assay opens a SQLite file it writes (the call cache, the run store, anything new).

Several processes open the same files at once: two terminals, a CI matrix on one runner,
pytest-xdist workers, Ray workers on one node. Opening is where they collide, so the
order here is the fix (issue 33):

1. the busy timeout is set before anything else touches the file, so every later step
   waits for a lock instead of failing at once with ``database is locked``;
2. WAL mode is asked for with bounded retries (switching a journal mode needs the file to
   itself, which SQLite does not always wait for);
3. the schema is created or migrated only when ``PRAGMA user_version`` says it is not
   current, inside one ``BEGIN IMMEDIATE`` transaction that re-reads the version first:
   one process creates or upgrades, the others wait and then find it done (two processes
   adding the same column, or inserting the same ``meta`` row, was the crash).

Every failure (a lock held past the timeout, a read-only directory, a full disk, a file
that is not a database) becomes one :class:`~assay.errors.StorageError` naming the file,
what it is, and the cause. Writes after opening go through :func:`storage_error` for the
same message.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from assay.errors import StorageError

__all__ = ["BUSY_TIMEOUT_S", "open_sqlite", "storage_error"]

BUSY_TIMEOUT_S = 30.0
"""How long any statement waits for another process's lock before giving up (and saying so)."""


def storage_error(exc: sqlite3.Error | OSError, path: Path, what: str, doing: str) -> StorageError:
    """One message for a SQLite or file-system failure: which file, what it is, what failed and why."""
    cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    hint = ""
    text = cause.lower()
    if "locked" in text or "busy" in text:
        hint = f" (another process held it for more than {BUSY_TIMEOUT_S:g} s)"
    elif "full" in text or "no space" in text or "too large" in text:
        hint = " (free some space, or point assay at another file)"
    elif "readonly" in text or "read-only" in text or "permission" in text:
        hint = " (the file or its directory cannot be written)"
    return StorageError(f"cannot {doing} {what} {path}: {cause}{hint}")


def open_sqlite(
    path: Path,
    *,
    what: str,
    version: int,
    schema: Sequence[str],
    migrate: Callable[[sqlite3.Connection, int], None] | None = None,
) -> sqlite3.Connection:
    """Open (creating if needed) a SQLite file safely under concurrency; return an autocommit connection.

    Args:
        path: The file; its directory is created.
        what: What the file is, for messages ("the judge-call cache").
        version: The schema version this code writes (kept in ``PRAGMA user_version``).
        schema: Idempotent DDL (``CREATE TABLE IF NOT EXISTS ...``), run when the version is behind.
        migrate: ``migrate(db, found)`` upgrades a file found at version ``found`` (0: new,
            or written before versions were kept); it runs inside the schema transaction.

    Raises:
        StorageError: the file cannot be opened, locked, created or upgraded, or it was
            written by a newer schema than ``version``.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(exc, path, what, "create the directory of") from None
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None)
    except sqlite3.Error as exc:
        raise storage_error(exc, path, what, "open") from None
    try:
        db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        _wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        found = int(db.execute("PRAGMA user_version").fetchone()[0])
        if found > version:
            raise StorageError(
                f"{what} {path} was written by a newer assay (schema {found}, this one reads up to {version}); "
                "upgrade assay to use it"
            )
        if found < version:
            _create_or_upgrade(db, version, schema, migrate)
    except StorageError:
        db.close()
        raise
    except sqlite3.Error as exc:
        db.close()
        raise storage_error(exc, path, what, "open") from None
    return db


def _wal(db: sqlite3.Connection) -> None:
    """WAL mode, retried while another process holds the file (the switch does not always wait)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _create_or_upgrade(
    db: sqlite3.Connection,
    version: int,
    schema: Sequence[str],
    migrate: Callable[[sqlite3.Connection, int], None] | None,
) -> None:
    db.execute("BEGIN IMMEDIATE")  # waits (busy timeout) for any other process creating or upgrading
    try:
        found = int(db.execute("PRAGMA user_version").fetchone()[0])  # someone may have done it meanwhile
        if found < version:
            for statement in schema:
                db.execute(statement)
            if migrate is not None:
                migrate(db, found)
            db.execute(f"PRAGMA user_version={int(version)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
