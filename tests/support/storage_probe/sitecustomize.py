"""Loaded by every Python process the tests start on the SQLite pass (tests/support/storage_probe puts this folder
first on PYTHONPATH): when this process opens a `store.sqlite3`, it leaves a file named after the test or fixture
that started it in EMPATHY_ARENA_STORE_PROBE (it wraps `sqlite3.connect`, which eval_backend/store.py calls, until
the first store is seen; with EMPATHY_ARENA_STORE_SQL=1 for the process's life, the shape of each store statement
the product issued written in the file: store_probe_sql.py). Nothing else changes in the process: a sitecustomize this one hides (Debian's, a
virtualenv's) still runs."""
import os
import sys


def _install() -> None:
    probe_dir = os.environ.get("EMPATHY_ARENA_STORE_PROBE")
    tag = os.environ.get("EMPATHY_ARENA_STORE_PROBE_TAG")
    if not probe_dir or not tag:
        return
    import hashlib
    import sqlite3
    name = os.path.join(probe_dir, hashlib.sha256(tag.encode()).hexdigest()[:32])   # storage_probe.tag_file
    original = sqlite3.connect
    if os.environ.get("EMPATHY_ARENA_STORE_SQL") == "1":
        sqlite3.connect = _tracing_connect(original, name)
        return

    # A wrapper, not an audit hook: an audit hook is called for every audited event of the process for its whole
    # life (every open, every frame lookup...) and doubled the time of a Gradio-heavy app under test
    # (tests/test_gradio_inputs.py: 427 s on the SQLite pass, where this runs, against 191 s on PostgreSQL).
    # Once a store has been seen the original comes back: nothing is left in the way.
    def connect(database, *args, **kwargs):
        try:
            if os.path.basename(os.fsdecode(database)) == "store.sqlite3":
                sqlite3.connect = original
                open(name, "a").close()
        except (OSError, TypeError, ValueError):
            pass
        return original(database, *args, **kwargs)

    sqlite3.connect = connect


def _tracing_connect(original, name: str):
    """EMPATHY_ARENA_STORE_SQL=1 (the SQLite pass): every store connection notes its statements, and the shape of
    each the product issued (not the tests' own code) new to this process is appended to the report file as a line
    `key<TAB>shape` (an append of a short line is whole, and nothing is lost if the process is killed)."""
    import threading
    from store_probe_sql import Shapes
    lock = threading.Lock()

    def report(_tag: str, key: str, text: str) -> None:
        with lock, open(name, "a", encoding="utf-8") as out:
            out.write(f"{key}\t{text}\n")

    return Shapes(report, lambda: name).connect(original, on_store=lambda: open(name, "a").close())


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        path = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.abspath(entry or ".") != here and os.path.isfile(path):
            with open(path, "rb") as f:
                exec(compile(f.read(), path, "exec"), {"__name__": "sitecustomize", "__file__": path})
            return


_install()
_chain()
