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
from dataclasses import dataclass
from pathlib import Path

from ..submissions.queue import RESTORED_UNFINISHED

VOTE_FIELDS = ("id", "battle_id", "model_a", "model_b", "winner", "slot", "said", "sounded", "reason", "first_heard",
               "attribute", "dimension", "benchmark_hash", "request_id", "created_at", "source")
BATTLE_FIELDS = ("id", "benchmark_hash", "request_id", "task", "item_id", "variant", "attribute", "dimension",
                 "model_a", "model_b", "first_heard", "min_listen_s", "served_at", "expires_at")
REFUSED_FIELDS = ("id", "battle_id", "reason", "message", "created_at")
SUBMISSION_FIELDS = ("model", "organisation", "link", "licence", "open_weights", "kind", "model_id", "audio_output",
                     "benchmark", "tasks", "limit_n", "state", "created_at", "updated_at", "started_at",
                     "finished_at", "error_class", "error_message", "summary")


@dataclass(frozen=True)
class LogSpec:
    name: str        # folder in the repo
    table: str       # must exist, else the log is skipped
    select: str      # rows with after (?) < watermark <= cut (?), in watermark order, LIMIT ?; column `seq`
    last: str        # the watermark's current maximum (the cut)

    def sql(self, store, text: str | None = None) -> str:
        """`select` (or another of its texts, like `last`) for the store's database."""
        return (self.select if text is None else text).replace("{battle_seq}", battle_seq(store))


LOGS = (
    LogSpec("votes", "arena_votes",
            f"SELECT id AS seq, {', '.join(VOTE_FIELDS)} FROM arena_votes WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
            "SELECT MAX(id) FROM arena_votes"),
    LogSpec("battles", "arena_battles",
            f"SELECT {{battle_seq}} AS seq, {', '.join(BATTLE_FIELDS)} FROM arena_battles WHERE {{battle_seq}} > ? "
            "AND {battle_seq} <= ? ORDER BY {battle_seq} LIMIT ?",
            "SELECT MAX({battle_seq}) FROM arena_battles"),
    LogSpec("refused", "arena_refused_votes",
            f"SELECT id AS seq, {', '.join(REFUSED_FIELDS)} FROM arena_refused_votes WHERE id > ? AND id <= ? "
            "ORDER BY id LIMIT ?",
            "SELECT MAX(id) FROM arena_refused_votes"),
    # one line per submission event, with the submission's public fields at the time of the flush
    LogSpec("submissions", "submission_events",
            "SELECT e.id AS seq, e.job_id AS submission_id, e.at, e.event, "
            + ", ".join(f"s.{c}" for c in SUBMISSION_FIELDS)
            + " FROM submission_events e JOIN submissions s ON s.id = e.job_id WHERE e.id > ? AND e.id <= ? "
              "ORDER BY e.id LIMIT ?",
            "SELECT MAX(id) FROM submission_events"),
)
NAMES = tuple(spec.name for spec in LOGS)
_FILE = re.compile(r"^(?P<log>[a-z]+)/(?P<node>[A-Za-z0-9]+)-(?P<seq>\d{8})\.jsonl$")


def battle_seq(store) -> str:
    """Battles' insertion order: SQLite's rowid, or the identity column arena_0004 adds on PostgreSQL."""
    return "rowid" if store.dialect == "sqlite" else "seq"


def node_id(store) -> str:
    """This data dir's writer id (file names are unique per writer); a wiped disk gets a new one.
    Processes starting together on one database agree on it (the first insert wins)."""
    node = store.get_meta("hub_sync.node")
    if not node:
        with store.transaction() as conn:
            conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                         ("hub_sync.node", json.dumps(hashlib.sha256(os.urandom(16)).hexdigest()[:12])))
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
            yield lambda spec, mark: _put_mark(conn, spec.name, mark)
        return
    import fcntl                                           # SQLite: every process on it shares this data dir
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
        for spec in LOGS:
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
        specs = [spec for spec in LOGS if store.has_table(spec.table)]
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
    out: dict[str, list[dict]] = {name: [] for name in NAMES}
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


def vote_key(rec: dict) -> str:
    """A vote's identity across writers: its battle (live votes), else its content (imports)."""
    if rec.get("battle_id"):
        return "b:" + rec["battle_id"]
    body = {k: rec.get(k) for k in VOTE_FIELDS if k not in ("id", "battle_id")}
    return "c:" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def restore(store, files: dict[str, str], append_votes=None) -> dict:
    """Put the logs' rows that the store lacks back into it. With an empty vote table the votes keep their
    ids (the canonical order, so the vote-log hash is the same as before the restart); otherwise the
    missing ones are appended after the local ones (a late restore after serving local data)."""
    logs = parse(files)
    counts = {}
    with store.transaction() as conn:
        if logs["votes"] and store.has_table("arena_votes"):
            if append_votes is None:
                raise RuntimeError("the vote log needs the arena's append_votes to be restored")
            local = [dict(r) for r in conn.execute(f"SELECT {', '.join(VOTE_FIELDS)} FROM arena_votes")]
            have = {vote_key(r) for r in local}
            # a vote logged by several writers (a late merge re-logs it under a new id): the latest id wins,
            # which is the order of the writer that merged last
            best: dict[str, dict] = {}
            for rec in logs["votes"]:
                k = vote_key(rec)
                if k not in have and (k not in best or rec["id"] > best[k]["id"]):
                    best[k] = rec
            fresh = sorted(best.values(), key=lambda r: (r["id"], r["created_at"], vote_key(r)))
            keep_ids = not local and len({r["id"] for r in fresh}) == len(fresh)
            rows = [{**{k: rec.get(k) for k in VOTE_FIELDS if keep_ids or k != "id"},
                     "session_id": None, "user": None, "ip_hash": None} for rec in fresh]
            counts["votes"] = append_votes(rows, conn)
            if keep_ids and fresh:
                _set_mark(store, conn, "votes", max(r["id"] for r in fresh))
        if logs["battles"] and store.has_table("arena_battles"):
            empty = conn.execute("SELECT COUNT(*) FROM arena_battles").fetchone()[0] == 0
            n = 0
            for rec in logs["battles"]:
                cur = conn.execute(
                    f"INSERT INTO arena_battles ({', '.join(BATTLE_FIELDS)}, session_id, ip_hash, voted) "
                    f"VALUES ({', '.join('?' * len(BATTLE_FIELDS))}, '', '', "
                    "CASE WHEN EXISTS (SELECT 1 FROM arena_votes WHERE battle_id = ?) THEN 1 ELSE 0 END) "
                    "ON CONFLICT (id) DO NOTHING",
                    (*[rec.get(k) for k in BATTLE_FIELDS], rec["id"]))
                n += cur.rowcount
            counts["battles"] = n
            if empty and n:
                _set_mark(store, conn, "battles", conn.execute(f"SELECT MAX({battle_seq(store)}) FROM arena_battles").fetchone()[0])
        if logs["refused"] and store.has_table("arena_refused_votes"):
            have = {tuple(r) for r in conn.execute(
                "SELECT battle_id, reason, message, created_at FROM arena_refused_votes")}
            empty = not have
            n = 0
            for rec in sorted(logs["refused"], key=lambda r: r["id"]):
                key = (rec.get("battle_id"), rec["reason"], rec["message"], rec["created_at"])
                if key in have:
                    continue
                have.add(key)
                conn.execute("INSERT INTO arena_refused_votes (battle_id, session_id, ip_hash, reason, message, "
                             "created_at) VALUES (?, NULL, NULL, ?, ?, ?)", key)
                n += 1
            counts["refused"] = n
            if empty and n:
                _set_mark(store, conn, "refused", conn.execute("SELECT MAX(id) FROM arena_refused_votes").fetchone()[0])
        if logs["submissions"] and store.has_table("submissions"):
            counts["submissions"] = _restore_submissions(store, conn, logs["submissions"])
    return counts


def _restore_submissions(store, conn, records: list[dict]) -> int:
    """The public request list survives a wiped disk: each submission the store lacks comes back with its latest
    public fields and its event history (who acted is not logged, so events have no actor). Returns how many."""
    have = {r[0] for r in conn.execute("SELECT id FROM submissions")}
    by_job: dict[int, list[dict]] = {}
    for rec in records:                              # file order; a stable sort by time keeps it for ties
        if rec.get("submission_id") not in have:
            by_job.setdefault(int(rec["submission_id"]), []).append(rec)
    if not by_job:
        return 0
    ended = []
    for job_id, recs in sorted(by_job.items()):
        recs.sort(key=lambda r: r["at"])
        row = {k: recs[-1].get(k) for k in SUBMISSION_FIELDS}
        if row["state"] in ("PENDING", "RUNNING"):
            ended.append((job_id, row["state"]))
        row.update(id=job_id, dedup_key=f"restored:{job_id}", submitter="(restored from the Hub)")
        conn.execute(f"INSERT INTO submissions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     tuple(row.values()))
        for rec in recs:
            conn.execute("INSERT INTO submission_events (job_id, at, event, actor, detail) VALUES (?, ?, ?, NULL, NULL)",
                         (job_id, rec["at"], rec["event"]))
    store.sync_ids(conn, "submissions")
    store.sync_ids(conn, "submission_events")
    if not have:                                     # the restored events are already in the repo
        _set_mark(store, conn, "submissions", conn.execute("SELECT MAX(id) FROM submission_events").fetchone()[0])
    for job_id, was in ended:
        message = (f"the Space restarted on a wiped disk while this job was {was}; its endpoint and API key are "
                   "kept on the machine only, so it cannot resume: submit the model again")
        conn.execute("UPDATE submissions SET state='FAILED', error_class=?, error_message=?, finished_at=updated_at "
                     "WHERE id=?", (RESTORED_UNFINISHED, message, job_id))
        conn.execute("INSERT INTO submission_events (job_id, at, event, actor, detail) VALUES (?, "
                     "(SELECT updated_at FROM submissions WHERE id=?), 'failed', 'hub restore', ?)",
                     (job_id, job_id, f"{RESTORED_UNFINISHED}: {message}"))
    return len(by_job)


def _set_mark(store, conn, name: str, after: int) -> None:
    """After an exact restore the restored rows are already in the repo: do not push them again."""
    store.lock(conn, FLUSH_LOCK)        # PostgreSQL: another replica's flush may be moving this watermark
    row = conn.execute("SELECT value FROM meta WHERE key=?", (f"hub_sync.log.{name}",)).fetchone()
    mark = json.loads(row[0]) if row else {"after": 0, "seq": 0}
    mark["after"] = max(mark["after"], int(after))
    _put_mark(conn, name, mark)


def _put_mark(conn, name: str, mark: dict) -> None:
    conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                 (f"hub_sync.log.{name}", json.dumps(mark)))
