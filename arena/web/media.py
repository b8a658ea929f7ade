"""The only way audio reaches a browser: routes that map an opaque token to one file, never a path.

    GET /api/arena/audio/{battle_id}/{clip}   clip user | A | B of a served, unexpired battle
    GET /media/reply/{token}                  one stored reply's audio (Browse tab, model page), if screened
                                              clean when screening is on (issue 14)
    GET /media/clip/{token}                   one clip of the served benchmark (Browse tab)
    GET /operator/media/held/{token}          a held reply's audio, for the operator's Moderation tab (signed,
                                              expires after 15 minutes, minted only on the operator's page)

Why: handing Gradio a path means letting it serve a folder (`allowed_paths`), and the data dir holds the
database (model names of unvoted battles, sessions, IP hashes), `arena_salt`, `signing_key`, submissions and
results in progress. Reading the SQLite file from the app process also drops SQLite's POSIX locks, so another
process could then delete the WAL under the running app and lose acknowledged votes. Here a token resolves to
one file the server chose, so there is no path for a stranger to spell.

- A battle id is the battle's unguessable token (arena_battles.id); the route looks the battle up in the
  database (models, request), so any replica sharing the database serves it. Expired battles serve nothing.
  What each response sent is recorded (arena/web/clip_response.py, arena/tables/battle_clips.py): the listening rule
  refuses a vote on audio that never left the server. No ETag or Last-Modified (they would tie the clip to the
  same file on another route). The Gradio tab's players use these same URLs.
- Reply and benchmark-clip tokens are signed with the server key (`space_shell.signing.Signer`, purposes
  "reply-audio" and "bench-clip"): the signed value names a database row or a benchmark item, not a file, and
  a client cannot make one up. Replicas must share the signing key (see signing.py).
- Every resolved file is also checked on its own: an audio suffix, a regular file, and inside the data dir
  only under replies/ (replies) or benchmarks/ and cache/hub/ (benchmark clips), or battle_audio/ and live/ (what
  voters hear in battles, battle route only: arena/services/battle_audio.py) or gold/ (a gold battle's check clip, battle
  route only): a tampered row or
  benchmark.json pointing at ../store.sqlite3 gets a 404, not the database.
"""
from __future__ import annotations

import base64
import html
import json
import time
from pathlib import Path
from typing import Callable

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from arena.core.clip_urls import BATTLE_PREFIX, battle_clip_url  # noqa: F401  (re-exported)
from arena.web.clip_response import ClipResponse
from eval_backend.moderation.replies import parse_subject

REPLY_PREFIX = "/media/reply"
CLIP_PREFIX = "/media/clip"
BATTLE_CLIPS = ("user", "A", "B")
REPLY_PURPOSE = "reply-audio"
CLIP_PURPOSE = "bench-clip"
AUDIO_TYPES = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg", ".ogg": "audio/ogg"}
# Where under the data dir a served file may live (outside it: the benchmark's own folder, chosen by the operator).
REPLY_DIRS = ("replies",)
CLIP_DIRS = ("benchmarks", "cache/hub")
LIVE_DIRS = ("live",)          # live battles' clips (arena/tables/live_store.py), served by the battle route only
HEARD_DIRS = ("battle_audio",)  # benchmark battles' clips as heard (arena/services/battle_audio.py), battle route only
GOLD_DIRS = ("gold",)          # gold battles' check clips (arena/services/gold.py), battle route only
MAX_TOKEN_CHARS = 512
# A held reply's audio for the operator's Moderation tab (leaderboard/moderation_tab.py): a signed token that
# names the screening subject and expires; minted only on the operator's page, never served by path.
HELD_PREFIX = "/operator/media/held"
HELD_PURPOSE = "held-audio"
HELD_TTL_S = 15 * 60



def audio_html(label: str, url: str | None, preload: str = "metadata") -> str:
    """A labelled <audio> player for one of these routes' URLs, for a gr.HTML (an empty player without a URL).
    The label is also the player's accessible name (a screen reader says "Reply A, audio")."""
    src = f' src="{html.escape(url)}"' if url else ""
    return (f'<div class="media-clip"><div class="media-clip-label"><strong>{html.escape(label)}</strong></div>'
            f'<audio controls preload="{preload if url else "none"}"{src} aria-label="{html.escape(label)}">'
            '</audio></div>')


def _pack(values: list) -> str:
    raw = json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unpack(value: str, n: int) -> list | None:
    try:
        out = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except ValueError:
        return None
    return out if isinstance(out, list) and len(out) == n else None


class MediaTokens:
    """Mints and reads the signed reply / benchmark-clip tokens (the URLs the Browse tab and model page show)."""

    def __init__(self, signer):
        self.signer = signer

    def reply_url(self, model: str, benchmark_hash: str, request_id: str) -> str:
        return f"{REPLY_PREFIX}/{self.signer.sign(REPLY_PURPOSE, _pack([model, benchmark_hash, request_id]))}"

    def clip_url(self, benchmark_hash: str, collection: str, item_id: str, index: int) -> str:
        value = _pack([benchmark_hash, collection, item_id, int(index)])
        return f"{CLIP_PREFIX}/{self.signer.sign(CLIP_PURPOSE, value)}"

    def held_url(self, subject: str, now: float, ttl_s: float = HELD_TTL_S) -> str:
        """The operator's link to a held reply's audio (the Moderation tab mints it for operators only)."""
        value = _pack([subject, int(now + ttl_s)])
        return f"{HELD_PREFIX}/{self.signer.sign(HELD_PURPOSE, value)}"

    def held_key(self, token: str, now: float) -> str | None:
        """The reply subject of an unexpired held-audio token, else None."""
        value = self.signer.unsign(HELD_PURPOSE, token)
        key = _unpack(value, 2) if value else None
        if not key or not isinstance(key[0], str) or type(key[1]) is not int or now > key[1]:
            return None
        return key[0]

    def reply_key(self, token: str) -> tuple[str, str, str] | None:
        value = self.signer.unsign(REPLY_PURPOSE, token)
        key = _unpack(value, 3) if value else None
        return tuple(key) if key and all(isinstance(x, str) for x in key) else None

    def clip_key(self, token: str) -> tuple[str, str, str, int] | None:
        value = self.signer.unsign(CLIP_PURPOSE, token)
        key = _unpack(value, 4) if value else None
        if not key or not all(isinstance(x, str) for x in key[:3]) or type(key[3]) is not int:
            return None
        return key[0], key[1], key[2], key[3]


def servable(path: str | Path | None, data_dir: Path, inside: tuple[str, ...]) -> Path | None:
    """`path` resolved, if it is an audio file the media routes may send; else None."""
    if not path:
        return None
    p = Path(path).resolve()
    if p.suffix.lower() not in AUDIO_TYPES or not p.is_file():
        return None
    root = Path(data_dir).resolve()
    if p.is_relative_to(root) and not any(p.is_relative_to(root / d) for d in inside):
        return None
    return p


def reply_file(store, model: str, benchmark_hash: str, request_id: str) -> Path | None:
    """The audio of one ok reply, from its database row."""
    rel = store.reply_audio_path(model, benchmark_hash, request_id)
    if not rel:
        return None
    p = store.abspath(rel)
    return p if p.resolve().is_relative_to(store.root.resolve() / "replies") else None


def playable_reply_file(service, model: str, benchmark_hash: str, request_id: str) -> Path | None:
    """The reply's audio only if the service lets it be played: with screening on, a reply not screened clean
    (flagged, not screened, or not screened yet) is not served (eval_backend/moderation); nor one a battle can
    play (the service's `reply_blinded`: this route names the model in the page that links it)."""
    cleared = getattr(service, "reply_cleared", None)
    blinded = getattr(service, "reply_blinded", None)
    reply = service.store.reply(model, benchmark_hash, request_id) if cleared or blinded else None
    if (cleared is not None and not cleared(reply)) or (blinded is not None and blinded(reply)):
        return None
    return reply_file(service.store, model, benchmark_hash, request_id)


def held_reply_file(store, subject: str) -> Path | None:
    """The audio of the reply a screening subject names (eval_backend/moderation/replies.py), if the stored reply
    still has that audio file."""
    key = parse_subject(subject)
    if key is None:
        return None
    model, benchmark_hash, request_id, audio = key
    if store.reply_audio_path(model, benchmark_hash, request_id) != audio:
        return None
    return reply_file(store, model, benchmark_hash, request_id)


def _audio(path: Path, name: str, cache: str) -> FileResponse:
    # A generic file name: the stored one may contain a model name. Range requests are served by FileResponse.
    return FileResponse(path, media_type=AUDIO_TYPES[path.suffix.lower()], filename=name,
                        content_disposition_type="inline",
                        headers={"Cache-Control": cache, "X-Content-Type-Options": "nosniff"})


def _not_found(what: str) -> JSONResponse:
    return JSONResponse({"error": "not_found", "message": f"no such {what}"}, status_code=404)


def _battle_file(service, battle_id: str, clip: str) -> Path | None:
    """The servable file behind a battle clip. Sending it records what was sent (arena/web/clip_response.py): the
    listening rule (arena/core/listening.py) needs the audio to have left the server."""
    path = service.battle_clip(battle_id, clip)
    return servable(path, service.store.root, HEARD_DIRS + LIVE_DIRS + GOLD_DIRS) if path else None


def build_media_router(service, tokens: MediaTokens | None = None,
                       benchmark: Callable[[], object] = lambda: None,
                       clip_file: Callable[..., str | None] = lambda *key: None) -> APIRouter:
    """`service`: the ArenaService (its store and battles); `benchmark()`: the benchmark Browse shows, or None;
    `clip_file(benchmark, benchmark_hash, collection, item_id, index)`: the path of a Browse clip, or None
    (leaderboard.browse.clip_file; injected, so the arena does not import the leaderboard)."""
    router = APIRouter()
    store = service.store

    @router.get(BATTLE_PREFIX + "/{battle_id}/{clip}")
    async def battle_clip(battle_id: str, clip: str):
        if clip not in BATTLE_CLIPS or len(battle_id) > MAX_TOKEN_CHARS:
            return _not_found("clip: serve a battle first (clips are user, A, B)")
        path = await run_in_threadpool(_battle_file, service, battle_id, clip)
        if path is None:
            return _not_found("clip: serve a battle first (clips are user, A, B); expired battles have none")
        # no validator or date shared with any other route; what was sent is reported for the listening rule
        return ClipResponse(path, AUDIO_TYPES[path.suffix.lower()], f"{clip}{path.suffix.lower()}",
                            lambda start, end, size: service.clip_sent(battle_id, clip, start, end, size))

    if tokens is None:
        return router

    @router.get(REPLY_PREFIX + "/{token}")
    async def reply_audio(token: str):
        key = tokens.reply_key(token)
        path = await run_in_threadpool(playable_reply_file, service, *key) if key else None
        path = servable(path, store.root, REPLY_DIRS)
        if path is None:
            return _not_found("reply audio")
        return _audio(path, f"reply{path.suffix.lower()}", "private, max-age=3600")

    @router.get(HELD_PREFIX + "/{token}")
    async def held_audio(token: str):
        subject = tokens.held_key(token, time.time()) if len(token) <= MAX_TOKEN_CHARS * 2 else None
        path = await run_in_threadpool(held_reply_file, store, subject) if subject else None
        path = servable(path, store.root, REPLY_DIRS)
        if path is None:
            return _not_found("held reply audio (operator links expire after 15 minutes)")
        return _audio(path, f"held{path.suffix.lower()}", "private, no-store")

    @router.get(CLIP_PREFIX + "/{token}")
    async def bench_clip(token: str):
        key = tokens.clip_key(token)
        path = await run_in_threadpool(clip_file, benchmark(), *key) if key else None
        path = servable(path, store.root, CLIP_DIRS)
        if path is None:
            return _not_found("benchmark clip")
        return _audio(path, f"clip{path.suffix.lower()}", "private, max-age=3600")

    return router


def mount_media(app: FastAPI, service, tokens: MediaTokens | None = None,
                benchmark: Callable[[], object] = lambda: None,
                clip_file: Callable[..., str | None] = lambda *key: None) -> None:
    """Add the media routes to `app` before Gradio is mounted at "/" (the first matching route wins)."""
    app.include_router(build_media_router(service, tokens, benchmark, clip_file))
