"""A store statement's shape and call site, for the storage probe's statement record (tests/support/storage_probe).

Every store connection opened while the probe traces (EMPATHY_ARENA_STORE_SQL=1) is a `sqlite3.Connection`
subclass whose `execute`/`executemany`/`executescript` note the SQL text they are given — the text with its
placeholders, as written at its call site — before running it as before. (Not a trace callback: SQLite hands one
the statement with its values written in, and taking them out again for every statement made the store-heavy
tests ~15 % slower.) A text's shape: its literals (strings, blobs, numbers, NULL) made `?`, a run of `?` made one,
white space made single — one per call site however many values an IN list had. The PostgreSQL store runs each call
site's text (translated once per text: eval_backend/store_pg.py), so a shape a test ran on SQLite is a call site
that test runs on PostgreSQL.

Lives in the folder the probe puts first on a child's PYTHONPATH: sitecustomize.py imports it in every child."""
from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import sys
from typing import Callable

STORE_FILE = "store.sqlite3"
TRACE_ENV = "EMPATHY_ARENA_STORE_SQL"        # "1": record each store statement's shape (scripts/test.sh: SQLite pass)

_LITERAL = re.compile(r"""[xX]'[0-9a-fA-F]*'|'(?:[^']|'')*'|(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b|\bNULL\b""")
_LIST = re.compile(r"\?(?:\s*,\s*\?)+")
_SPACE = re.compile(r"\s+")


def shape(statement: str) -> str:
    """The statement with its values taken out (see the module's docstring)."""
    text = _LITERAL.sub("?", statement)
    return _SPACE.sub(" ", _LIST.sub("?,…", text)).strip()


def key(statement_shape: str) -> str:
    """A short name for a shape (the record keeps the names; a shape may be a long INSERT)."""
    return hashlib.sha256(statement_shape.encode()).hexdigest()[:16]


def is_sqlite_own(statement_shape: str) -> bool:
    """A statement only the SQLite store issues (its pragmas, its checkpoints): PostgreSQL has no such call site."""
    return statement_shape[:6].upper() == "PRAGMA"


# A statement's call site: the first frame outside the store's pass-through helpers (`Store.query` and
# `Store.transaction`, which run what their caller wrote). In the tests' own code (tests/: an assertion reading what
# the app wrote, a test app seeding its data) it is the test's observation, not a call site of the product: such
# statements are not kept.
TESTS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_STORE = os.path.join("eval_backend", "store.py")
_PASS_THROUGH = {"query", "transaction"}


def issued_by_the_tests(frame) -> bool:
    """The statement run by `frame` (the frame that called `execute`) was written in the tests' own code."""
    while frame is not None:
        code = frame.f_code
        if not (code.co_filename.endswith(_STORE) and code.co_name in _PASS_THROUGH):
            return code.co_filename.startswith(TESTS_DIR)
        frame = frame.f_back
    return False


class Shapes:
    """The shapes noted in one process: `note(sql, frame)` for each statement; `on_new(key, shape)` is called once
    for each shape the product issued first here (`tag()`: what the record files it under, or None: not kept)."""

    def __init__(self, on_new: Callable[[str, str, str], None], tag: Callable[[], str | None]):
        self.on_new, self.tag = on_new, tag
        self.cache: dict[str, tuple[str, str]] = {}        # SQL text -> (key, shape)
        self.seen: set[tuple[str, str]] = set()            # (tag, key) already passed on

    def note(self, sql, frame) -> None:
        try:
            tag = self.tag()
            if tag is None or not isinstance(sql, str) or issued_by_the_tests(frame):
                return
            found = self.cache.get(sql)
            if found is None:
                text = shape(sql)
                found = self.cache[sql] = (key(text), text[:400])
            if (tag, found[0]) not in self.seen:
                self.seen.add((tag, found[0]))
                self.on_new(tag, *found)
        except Exception:           # noqa: BLE001 -- a probe's fault must never change the process under test
            pass

    def connection_class(self) -> type:
        note = self.note

        class NotingConnection(sqlite3.Connection):
            def execute(self, sql, *args, **kwargs):
                note(sql, sys._getframe(1))
                return super().execute(sql, *args, **kwargs)

            def executemany(self, sql, *args, **kwargs):
                note(sql, sys._getframe(1))
                return super().executemany(sql, *args, **kwargs)

            def executescript(self, script, *args, **kwargs):
                note(script, sys._getframe(1))
                return super().executescript(script, *args, **kwargs)

        return NotingConnection

    def connect(self, original: Callable, on_store: Callable[[], None] = lambda: None) -> Callable:
        """`sqlite3.connect` that opens a store's database with the noting class, calling `on_store()` first (any
        other file as before)."""
        connection_class = self.connection_class()

        def connect(database, *args, **kwargs):
            try:
                is_store = os.path.basename(os.fsdecode(database)) == STORE_FILE
            except (TypeError, ValueError):
                is_store = False
            if is_store:
                try:
                    on_store()
                except Exception:   # noqa: BLE001 -- a probe's fault must never change the process under test
                    pass
                if "factory" not in kwargs and len(args) < 5:
                    kwargs["factory"] = connection_class
            return original(database, *args, **kwargs)

        return connect
