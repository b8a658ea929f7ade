"""A store statement's shape, for the storage probe's statement record (tests/support/storage_probe).

SQLite hands a trace callback the statement with its parameters written in (`sqlite3_expanded_sql`), so the shape
is that text with every literal — a string, a blob, a number, NULL — made a `?`, runs of `?` in a list made one,
and white space made single. Two statements have one shape when one call site made them with other values; the
PostgreSQL store runs each call site's text (translated once per text: eval_backend/store_pg.py), so a shape run on
SQLite by a test that also runs on PostgreSQL is a call site PostgreSQL runs.

Lives in the folder the probe puts first on a child's PYTHONPATH: sitecustomize.py imports it in every child."""
from __future__ import annotations

import hashlib
import os
import re

STORE_FILE = "store.sqlite3"
TRACE_ENV = "EMPATHY_ARENA_STORE_SQL"        # "1": record each store statement's shape (scripts/test.sh's shared part)

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


# A statement's call site: the first frame outside the store's pass-through helpers (`Store.query` and
# `Store.transaction`, which run what their caller wrote) and sqlite3's own Python. In the tests' own code (tests/:
# an assertion reading what the app wrote, a test app seeding its data) it is the test's observation, not a call
# site of the product: such statements are not kept.
TESTS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_STORE = os.path.join("eval_backend", "store.py")
_PASS_THROUGH = {"query", "transaction"}
_SQLITE = (os.path.join("sqlite3", "__init__.py"), os.path.join("sqlite3", "dbapi2.py"))


def issued_by_the_tests(frame) -> bool:
    """The statement being run by `frame` (the frame that called the trace callback) was written in the tests' own
    code (see above)."""
    while frame is not None:
        code = frame.f_code
        name = code.co_filename
        if not (name.endswith(_SQLITE) or (name.endswith(_STORE) and code.co_name in _PASS_THROUGH)):
            return name.startswith(TESTS_DIR)
        frame = frame.f_back
    return False


def is_sqlite_own(statement_shape: str) -> bool:
    """A statement only the SQLite store issues (its pragmas, its checkpoints): PostgreSQL has no such call site."""
    return statement_shape[:6].upper() == "PRAGMA"
