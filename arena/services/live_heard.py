"""A live battle's clips as heard, and whether its two replies differ (issues 22: arena/services/battle_audio.py, distinct.py).

Each clip's heard version (one format, one loudness) is made once per battle, by content: the check that the two
replies differ measures them, and the battle's folder then receives the same bytes. Measuring (pitch, rate) is
needed only when the two replies say the same words; replies with different words are judged on their words alone.

    heard = LiveHeard()
    heard.start(user_wav)                            # made in the background while the models answer
    why = heard.same(text_a, wav_a, text_b, wav_b)   # None when they differ; else distinct.IDENTICAL_AUDIO | ...
    seconds(wav_a)                                   # a clip's length as heard, from its header (no work)
    heard.write_later(folder, {"user": user_wav, "A": wav_a, "B": wav_b})   # once the battle is stored
    wait_written(folder / "A.heard.wav")             # the clip route: waits for a write in flight, if any

The battle is answered without waiting for the heard files: their lengths are exact from the sources' headers
(`battle_audio.heard_frames`), and the clip route waits for a file still being written (a replica that did not
write it makes it from the stored original: the same bytes).
"""
from __future__ import annotations

import hashlib
import io
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import soundfile as sf

from arena.core import distinct
from arena.services.battle_audio import RATE, Delivery, heard_frames, make_heard, named_clip, write_named
from arena.tables import live_store

log = logging.getLogger(__name__)

VOID_SAME = ("the two models gave the same reply and no other model was free to answer instead, so this battle is "
             "void (nothing was kept); please try again")


POOL = ThreadPoolExecutor(2, thread_name_prefix="live-heard")   # clips made while the battle waits for replies
WRITERS = ThreadPoolExecutor(2, thread_name_prefix="live-heard-write")   # apart: a write waits on POOL's work
_WRITING: dict[str, Future] = {}          # heard file path -> its write in flight (this process)
_WRITING_LOCK = threading.Lock()


def seconds(data: bytes) -> float:
    """The length of a clip as heard, from the source's header (exact: battle_audio.heard_frames)."""
    info = sf.info(io.BytesIO(data))
    return heard_frames(info.frames, info.samplerate) / RATE


def wait_written(path: Path, timeout_s: float = 30.0) -> None:
    """Wait for this process's write of a heard file, when one is in flight."""
    with _WRITING_LOCK:
        future = _WRITING.get(str(path))
    if future is not None:
        try:
            future.result(timeout_s)
        except Exception:       # the route then makes the clip itself, or answers 404
            pass


class LiveHeard:
    def __init__(self) -> None:
        self._made: dict[str, tuple[bytes, dict]] = {}      # sha256 of the source -> (heard wav, facts)
        self._early: dict[str, Future] = {}                  # sha256 -> making started by `start`
        self._lock = threading.Lock()

    def start(self, data: bytes) -> None:
        """Start making this clip now, off the caller's path (the voter's clip while the models answer, each
        reply as it arrives): the battle then finds it made."""
        sha = hashlib.sha256(data).hexdigest()
        with self._lock:
            if sha not in self._made and sha not in self._early:
                self._early[sha] = POOL.submit(make_heard, data, False)

    def make(self, data: bytes, measure: bool = False) -> tuple[str, bytes, dict]:
        sha = hashlib.sha256(data).hexdigest()
        with self._lock:
            early = self._early.pop(sha, None)
        got = early.result() if early is not None else self._made.get(sha)
        if got is None or (measure and "delivery" not in got[1]):
            got = make_heard(data, measure)
        self._made[sha] = got
        return sha, *got

    def facts(self, words: str | None, data: bytes, measure: bool) -> distinct.ClipFacts:
        sha, _, facts = self.make(data, measure) if measure else (hashlib.sha256(data).hexdigest(), b"", {})
        d = facts.get("delivery")
        return distinct.ClipFacts(distinct.words_key(words), sha, Delivery(**d) if d else None)

    def same(self, words_a: str | None, wav_a: bytes, words_b: str | None, wav_b: bytes) -> str | None:
        """Why these two replies are not worth a battle (distinct.REASONS), or None when they differ."""
        a, b = self.facts(words_a, wav_a, False), self.facts(words_b, wav_b, False)
        if a.sha256 != b.sha256 and distinct.same_words(a, b):
            a, b = self.facts(words_a, wav_a, True), self.facts(words_b, wav_b, True)
        return distinct.verdict(a, b)

    def write_later(self, folder: Path, sources: dict[str, bytes]) -> None:
        """Write the heard files off the battle's path (the clip route waits for them: `wait_written`)."""
        for name, data in sources.items():
            path = str(Path(folder) / f"{name}.heard.wav")

            def one(name=name, data=data, path=path) -> None:
                try:
                    if Path(folder).is_dir():          # a battle deleted meanwhile (retention) stays deleted
                        write_named(folder, name, *self.make(data))
                except Exception:
                    log.exception("live battle clip %s could not be made as heard", name)
                finally:
                    with _WRITING_LOCK:
                        _WRITING.pop(path, None)
            with _WRITING_LOCK:
                _WRITING[path] = WRITERS.submit(one)

    @staticmethod
    def when_written(folder: Path, names: tuple[str, ...], fn) -> None:
        """Call `fn()` on a thread of its own once the heard files `names` of `folder` are written (or failed):
        what must be measured on the clips as heard (the battle's style covariates) without holding the battle."""
        def run() -> None:
            for name in names:
                wait_written(Path(folder) / f"{name}.heard.wav")
            try:
                fn()
            except Exception:
                log.exception("after the live battle clips %s were written", ", ".join(names))
        threading.Thread(target=run, name="live-heard-after", daemon=True).start()


def live_clip_path(store, battle_id: str, clip: str) -> Path | None:
    """The file of clip user | A | B of a live battle whose audio is not deleted: what the voter hears, made with
    the battle (waited for while it is being written); None otherwise."""
    folder = live_store.clip_folder(store, battle_id, clip)
    if folder is None:
        return None
    heard = folder / f"{clip}.heard.wav"
    if not heard.is_file():
        wait_written(heard)
    if heard.is_file():
        return heard
    if not (folder / f"{clip}.wav").is_file():
        return None
    return named_clip(folder, clip).path       # a battle stored before issue 22: its heard clip made now
