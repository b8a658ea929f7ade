"""Loaded by every Python process the tests start on the SQLite pass (tests/support/storage_probe puts this folder
first on PYTHONPATH): when this process opens a `store.sqlite3`, it leaves a file named after the test or fixture
that started it in EMPATHY_ARENA_STORE_PROBE. Nothing else changes in the process: a sitecustomize this one hides
(Debian's, a virtualenv's) still runs."""
import os
import sys


def _install() -> None:
    probe_dir = os.environ.get("EMPATHY_ARENA_STORE_PROBE")
    tag = os.environ.get("EMPATHY_ARENA_STORE_PROBE_TAG")
    if not probe_dir or not tag:
        return
    import hashlib
    name = os.path.join(probe_dir, hashlib.sha256(tag.encode()).hexdigest()[:32])   # storage_probe.tag_file
    done = []

    def audit(event, args):
        if event == "sqlite3.connect" and not done and os.path.basename(os.fsdecode(args[0])) == "store.sqlite3":
            done.append(True)
            try:
                open(name, "a").close()
            except OSError:
                pass

    sys.addaudithook(audit)


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
