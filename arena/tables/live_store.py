"""The SQL and files of live battles (arena/services/live.py): one arena_battles row with source='live', one arena_live row,
and the battle's three clips under `<data dir>/live/<battle id>/{user,A,B}.wav` (the originals: a release copies
them) with what the voter hears beside them, `{user,A,B}.heard.wav` (arena/services/battle_audio.py: one format, one loudness).

The clips are served only through the battle route (arena/web/media.py), like every battle's clips: the route looks
the battle up, and `clip_folder` (and arena/services/live_heard.py:live_clip_path) answers from the arena_live row, so a deleted clip (retention) is a 404.
Retention: every live row carries `delete_after`; `delete_due` removes the folder and clears the user's words
(transcript) and the replies' words of every row past it. The battle and vote rows stay (they hold no audio and no
words), so the ratings replay unchanged.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from eval_backend.store import register_migration

# arena_live: what a live battle adds beside its arena_battles row (arena/tables/storage.py's arena_0005_live gives
# that row its `source`): the transcript, the replies' words, consent and the deletion date.
register_migration("arena_live_0001", (
    """CREATE TABLE IF NOT EXISTS arena_live (
    battle_id       TEXT PRIMARY KEY,
    "user"          TEXT,
    ip_hash         TEXT NOT NULL,
    transcript      TEXT,
    text_a          TEXT,
    text_b          TEXT,
    consent_store   INTEGER NOT NULL CHECK (consent_store IN (0, 1)),
    consent_release INTEGER NOT NULL CHECK (consent_release IN (0, 1)),
    crisis          INTEGER NOT NULL DEFAULT 0 CHECK (crisis IN (0, 1)),
    screen          TEXT,
    replaced        TEXT,
    audio_dir       TEXT,
    created_at      REAL NOT NULL,
    delete_after    REAL NOT NULL,
    deleted_at      REAL
)""",
    "CREATE INDEX IF NOT EXISTS arena_live_due ON arena_live (deleted_at, delete_after)",
    'CREATE INDEX IF NOT EXISTS arena_live_user ON arena_live ("user", created_at)',
    "CREATE INDEX IF NOT EXISTS arena_live_ip ON arena_live (ip_hash, created_at)",
))

LIVE_DIR = "live"
CLIPS = ("user", "A", "B")
BENCHMARK_HASH = "live"       # arena_battles.benchmark_hash of a live battle (its request is the voter's clip)


def battle_dir(root: Path, battle_id: str) -> Path:
    return Path(root) / LIVE_DIR / battle_id


def request_id(battle_id: str) -> str:
    """A live battle's request id: named after the battle but not the battle id itself, which opens the
    voter's clip (arena/web/media.py). It goes where a request id goes: the contestants' X-Client-Request-Id, the
    vote's `request_id` in exports and public releases."""
    return "live/" + hashlib.sha256(f"live-request:{battle_id}".encode()).hexdigest()[:24]


def battle_values(*, battle_id: str, session_id: str, user: str | None, ip_hash: str, model_a: str, model_b: str,
                  min_listen_s: float, served_at: float, expires_at: float) -> tuple:
    """A live battle's arena_battles values, in arena/tables/storage.py:insert_battle's column order (its request is
    the voter's own clip, so the benchmark fields name the battle)."""
    return (battle_id, session_id, user, ip_hash, BENCHMARK_HASH, request_id(battle_id), "live", battle_id, "-",
            None, None, model_a, model_b, "A", min_listen_s, served_at, expires_at)


def insert_live(conn, *, battle_id: str, user: str | None, ip_hash: str, served_at: float,
                transcript: str | None, text_a: str | None, text_b: str | None, consent_store: bool,
                consent_release: bool, crisis: bool, screen: str | None, replaced: list, delete_after: float) -> None:
    """What a live battle adds beside its arena_battles row (same transaction as that row)."""
    conn.execute(
        """INSERT INTO arena_live (battle_id, "user", ip_hash, transcript, text_a, text_b, consent_store,
               consent_release, crisis, screen, replaced, audio_dir, created_at, delete_after)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
        (battle_id, user, ip_hash, transcript, text_a, text_b, int(consent_store), int(consent_release),
         int(crisis), screen, json.dumps(replaced), f"{LIVE_DIR}/{battle_id}", served_at, delete_after))


def clip_folder(store, battle_id: str, clip: str) -> Path | None:
    """The folder of a live battle's clips when `clip` is user | A | B and its audio is not deleted; None otherwise
    (the file served is chosen by arena/services/live_heard.py:live_clip_path)."""
    if clip not in CLIPS:
        return None
    rows = store.query("SELECT audio_dir, deleted_at FROM arena_live WHERE battle_id=?", (battle_id,))
    if not rows or rows[0]["deleted_at"] is not None or not rows[0]["audio_dir"]:
        return None
    return store.abspath(rows[0]["audio_dir"])


def reply_texts(store, battle_id: str) -> dict[str, str | None]:
    """{"A": words, "B": words, "user": transcript} of a live battle (None once deleted)."""
    rows = store.query("SELECT transcript, text_a, text_b FROM arena_live WHERE battle_id=?", (battle_id,))
    if not rows:
        return {}
    return {"user": rows[0]["transcript"], "A": rows[0]["text_a"], "B": rows[0]["text_b"]}


def heard(store, battle_id: str):
    """The voter's transcript and its screen verdict (transcript, crisis, screen) of a live battle, or None."""
    rows = store.query("SELECT transcript, crisis, screen FROM arena_live WHERE battle_id=?", (battle_id,))
    return rows[0] if rows else None


def set_heard(conn, battle_id: str, transcript: str | None, crisis: bool, screen: str | None) -> None:
    """The transcript made after the battle was stored (arena/services/live.py does not wait for it); a battle whose
    words were already deleted (retention) stays deleted."""
    conn.execute("UPDATE arena_live SET transcript=?, crisis=?, screen=? WHERE battle_id=? AND deleted_at IS NULL",
                 (transcript, int(crisis), screen, battle_id))


def releasable(store) -> list:
    """Live battles whose voter agreed to the public release (and to storage, which it needs) and whose clips
    and words are not deleted, oldest first: the only live data a public release may hold (arena/services/release.py)."""
    return store.query("SELECT battle_id, transcript, text_a, text_b, audio_dir FROM arena_live "
                       "WHERE consent_release=1 AND consent_store=1 AND deleted_at IS NULL "
                       "ORDER BY created_at, battle_id")


def recent_count(store, column: str, key: str, since: float) -> int:
    """Live battles started by this user / address since `since` (the per-user limit counts stored battles,
    so it holds across restarts and replicas)."""
    assert column in ('"user"', "ip_hash")
    return int(store.query(f"SELECT COUNT(*) FROM arena_live WHERE {column}=? AND created_at > ?",
                           (key, since))[0][0])


def delete_due(store, now: float) -> list[str]:
    """Delete the audio and words of every live battle past its `delete_after`; returns their battle ids."""
    rows = store.query("SELECT battle_id, audio_dir FROM arena_live WHERE deleted_at IS NULL AND delete_after <= ?",
                       (now,))
    done = []
    root = Path(store.root).resolve()
    for r in rows:
        folder = store.abspath(r["audio_dir"]).resolve() if r["audio_dir"] else None
        if folder is not None and folder.is_relative_to(root / LIVE_DIR) and folder != root / LIVE_DIR:
            for _ in range(5):          # a heard file written meanwhile (arena/services/live_heard.py) can keep it: again
                shutil.rmtree(folder, ignore_errors=True)
                if not folder.exists():
                    break
        with store.transaction() as conn:
            conn.execute("UPDATE arena_live SET deleted_at=?, transcript=NULL, text_a=NULL, text_b=NULL "
                         "WHERE battle_id=? AND deleted_at IS NULL", (now, r["battle_id"]))
        done.append(r["battle_id"])
    return done
