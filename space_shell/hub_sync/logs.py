"""Append-only logs: new rows go into new JSONL files of the scheduler's folder, and come back on restore.

Each log reads the rows after its watermark (a monotonic column) and writes them as one new file
`<log>/<node>-<seq>.jsonl`; the watermark and the sequence number move together in one meta value,
written after the file, so a crash in between leaves an orphan file (same name, seq above the recorded
one) that `drop_orphans` deletes before the next flush: a name is never reused for other content.
The file is renamed into the folder while the scheduler's lock is held, so a push never sees half a file.

A flush writes the rows present when it starts (one cut, read in one statement for every log), not rows that
arrive while it runs: one file per log per push (more only past `batch` rows), a vote and its battle in the same
push, and a flush that ends under any load. Flushes are serialised across processes sharing the database (the
watermarks and the writer id are rows of that database): on PostgreSQL an advisory lock held from reading a
watermark to recording it (several replicas), on SQLite a file lock in the data dir (several processes on one
data dir). Without it two flushes read the same watermark and both write `<node>-<seq+1>` with different rows.

Private fields stay home: no session ids, IP hashes or user names; submissions carry their public fields.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from contextlib import contextmanager, nullcontext
from pathlib import Path

from eval_backend import sync_logs
from eval_backend.submissions import queue as _queue  # noqa: F401  (registers the submissions log)
from eval_backend.sync_logs import RestoreContext, SyncLog

LogSpec = SyncLog        # a log: its table, its SQL and its restore (eval_backend/sync_logs.py)


def logs() -> tuple[SyncLog, ...]:
    """The registered logs (the arena's register when arena.tables.storage is imported; the app imports it)."""
    return sync_logs.sync_logs()


def names() -> tuple[str, ...]:
    return tuple(spec.name for spec in logs())


_FILE = re.compile(r"^(?P<log>[a-z]+)/(?P<node>[A-Za-z0-9]+)-(?P<seq>\d{8})\.jsonl$")


def node_id(store) -> str:
    """This data dir's writer id (file names are unique per writer); a wiped disk gets a new one.
    Processes starting together on one database agree on it (the first insert wins)."""
    node = store.get_meta("hub_sync.node")
    if not node:
        store.put_meta_once("hub_sync.node", hashlib.sha256(os.urandom(16)).hexdigest()[:12])
        node = store.get_meta("hub_sync.node")
    return node


def _mark(store, spec: LogSpec) -> dict:
    return store.get_meta(f"hub_sync.log.{spec.name}", {"after": 0, "seq": 0})


FLUSH_LOCK = "hub_sync.flush"


@contextmanager
def exclusive(store, folder: Path):
    """Hold the log flush lock of the store's database: no other flush or orphan sweep, in this process or any
    other, reads or moves the watermarks meanwhile. Yields `record(spec, mark)`, which writes a watermark under
    the lock (PostgreSQL: in the lock's transaction, committed when the block ends; SQLite: at once)."""
    if store.dialect == "postgresql":
        with store.transaction(immediate=False) as conn:   # not the store's write lock: votes never wait on a flush
            store.lock(conn, FLUSH_LOCK)
            yield lambda spec, mark: _put_mark(store, conn, spec.name, mark)
        return
    import fcntl  # SQLite: every process on it shares this data dir
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / "flush.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)                      # also between threads (one open file each)
        try:
            yield lambda spec, mark: store.put_meta(f"hub_sync.log.{spec.name}", mark)
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def drop_orphans(store, folder: Path, node: str) -> list[str]:
    """Delete this writer's files numbered above the recorded sequence (written, never recorded, never pushed)."""
    gone = []
    with exclusive(store, folder):       # a flush elsewhere may have renamed its file and not yet recorded it
        for spec in logs():
            recorded = _mark(store, spec)["seq"]
            for path in (folder / spec.name).glob(f"{node}-*.jsonl"):
                m = _FILE.match(f"{spec.name}/{path.name}")
                if m and int(m["seq"]) > recorded:
                    path.unlink()
                    gone.append(f"{spec.name}/{path.name}")
    return gone


def flush(store, folder: Path, node: str, lock=None, batch: int = 50_000) -> list[str]:
    """Write the rows added since the last flush, up to the ones present when it starts, into new files;
    returns their repo paths."""
    written = []
    tmp_dir = folder.parent / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    with exclusive(store, folder) as record:
        specs = [spec for spec in logs() if store.has_table(spec.table)]
        if not specs:
            return written
        # one statement, so one snapshot: a vote and its battle (one transaction) fall on the same side
        cuts = store.query("SELECT " + ", ".join(f"({spec.sql(store, spec.last)}) AS c{i}" for i, spec in enumerate(specs)))[0]
        for i, spec in enumerate(specs):
            cut = cuts[i]
            if cut is None:
                continue
            while True:
                mark = _mark(store, spec)
                rows = store.query(spec.sql(store), (mark["after"], cut, batch))
                if not rows:
                    break
                last = rows[-1]["seq"]
                text = "".join(json.dumps({k: r[k] for k in r.keys() if k != "seq"}, ensure_ascii=False) + "\n"
                               for r in rows)
                name = f"{spec.name}/{node}-{mark['seq'] + 1:08d}.jsonl"
                fd, tmp = tempfile.mkstemp(dir=tmp_dir, suffix=".jsonl")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                with lock or nullcontext():
                    (folder / spec.name).mkdir(parents=True, exist_ok=True)
                    os.replace(tmp, folder / name)
                record(spec, {"after": last, "seq": mark["seq"] + 1})
                written.append(name)
    return written


# ---------------------------------------------------------------- restore
def parse(files: dict[str, str]) -> dict[str, list[dict]]:
    """{repo path: text} -> {log name: records}, files in name order (a writer's files in sequence)."""
    out: dict[str, list[dict]] = {name: [] for name in names()}
    for path in sorted(files):
        m = _FILE.match(path)
        if not m or m["log"] not in out:
            continue
        for n, line in enumerate(files[path].splitlines(), start=1):
            if line.strip():
                try:
                    out[m["log"]].append(json.loads(line))
                except ValueError as exc:
                    raise ValueError(f"{path} line {n}: not JSON ({exc})") from None
    return out


def restore(store, files: dict[str, str], append_votes=None) -> dict:
    """Put the logs' rows that the store lacks back into it, in one transaction, each log by its owner's
    restore (the arena's votes keep their ids on an empty table; see arena/tables/storage.py)."""
    records = parse(files)
    counts = {}
    with store.transaction() as conn:
        for spec in logs():
            if records[spec.name] and store.has_table(spec.table):
                ctx = RestoreContext(store, conn, lambda after, name=spec.name: _set_mark(store, conn, name, after),
                                     append_votes)
                counts[spec.name] = spec.restore(ctx, records[spec.name])
    return counts


def _set_mark(store, conn, name: str, after: int) -> None:
    """After an exact restore the restored rows are already in the repo: do not push them again."""
    store.lock(conn, FLUSH_LOCK)        # PostgreSQL: another replica's flush may be moving this watermark
    mark = dict(store.get_meta(f"hub_sync.log.{name}", {"after": 0, "seq": 0}))   # conn's thread: same connection
    mark["after"] = max(mark["after"], int(after))
    _put_mark(store, conn, name, mark)


def _put_mark(store, conn, name: str, mark: dict) -> None:
    store.put_meta(f"hub_sync.log.{name}", mark, conn)
