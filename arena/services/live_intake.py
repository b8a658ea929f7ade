"""Live mode's intake: its settings and the checks on what the voter sends (consent, the recording), pure: a
refusal (LiveRefused) costs nothing and stores nothing (arena/services/live.py, step 1 of its module doc)."""
from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass

import numpy as np
import soundfile as sf
from gradio.utils import get_space

MiB = 2 ** 20
LIVE_PREFIX = "EMPATHY_ARENA_LIVE_"


@dataclass(frozen=True)
class LiveSettings:
    max_utterance_s: float = 30.0       # the voter's clip
    min_utterance_s: float = 0.5
    silence_dbfs: float = -45.0         # a clip whose loudest 50 ms window is quieter than this is "silent"
    deadline_s: float = 30.0            # from the upload to both replies ready, replacements included
    call_timeout_s: float = 20.0        # one contestant's call (never past the deadline)
    retention_s: float = 3600.0         # clips and words kept without consent to store
    keep_days: float = 365.0            # clips and words kept with consent to store
    user_per_hour: int = 20             # live battles per signed-in user (else per client address) per hour
    concurrency: int = 2                # live battles in flight in this process (each costs two model calls)
    require_sign_in: bool = False       # on Spaces: live mode needs the Hub sign-in
    max_upload_bytes: int = 8 * MiB     # the upload (also the body cap of the live route)
    reply_audio_s: float = 60.0         # one reply's audio
    sweep_every_s: float = 300.0

    @classmethod
    def from_env(cls, env: dict | None = None, spaces: bool | None = None) -> "LiveSettings":
        env = os.environ if env is None else env
        if spaces is None:
            # Gradio's own test, as leaderboard/identity.py:on_spaces (not imported: arena never imports leaderboard)
            spaces = get_space() is not None

        def num(name: str, default: float, kind=float):
            raw = env.get(LIVE_PREFIX + name)
            if raw is None or not raw.strip():
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ValueError(f"{LIVE_PREFIX}{name} must be a number, got {raw!r}") from None
            if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"{LIVE_PREFIX}{name} must be a finite number >= 0, got {raw!r}")
            return value
        d = cls()
        return cls(max_utterance_s=num("MAX_S", d.max_utterance_s), deadline_s=num("DEADLINE_S", d.deadline_s),
                   call_timeout_s=num("CALL_TIMEOUT_S", d.call_timeout_s),
                   retention_s=num("RETENTION_S", d.retention_s), keep_days=num("KEEP_DAYS", d.keep_days),
                   user_per_hour=num("PER_USER_HOUR", d.user_per_hour, int),
                   concurrency=max(1, num("CONCURRENCY", d.concurrency, int)),
                   sweep_every_s=max(0.5, num("SWEEP_EVERY_S", d.sweep_every_s)),
                   require_sign_in=spaces or env.get(LIVE_PREFIX + "SIGN_IN", "0") == "1")


class LiveRefused(Exception):
    """A live battle not made: HTTP `status`, a `code`, a plain `message`; nothing was stored."""

    def __init__(self, status: int, code: str, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after_s = status, code, message, retry_after_s


# ---------------------------------------------------------------- input checks (pure)
def check_consent(consent_store, consent_release) -> tuple[bool, bool]:
    """Both answers are required (yes or no): the consent step must have been seen."""
    values = []
    for name, raw in (("consent_store", consent_store), ("consent_release", consent_release)):
        if isinstance(raw, bool):
            values.append(raw)
        elif isinstance(raw, str) and raw.strip().lower() in ("true", "1", "yes", "on"):
            values.append(True)
        elif isinstance(raw, str) and raw.strip().lower() in ("false", "0", "no", "off"):
            values.append(False)
        else:
            raise LiveRefused(422, "missing_consent", f"answer the consent question '{name}' (true or false) "
                                                      "before recording")
    store, release = values
    if release and not store:
        raise LiveRefused(422, "bad_consent", "a recording can enter the public data only if it may be stored")
    return store, release


def decode_utterance(data: bytes, settings: LiveSettings) -> tuple[np.ndarray, int]:
    """Mono float32 and its rate, or LiveRefused: not audio (415), too long (413), too short or silent (422)."""
    if not data:
        raise LiveRefused(422, "no_audio", "send a recording in the 'audio' field")
    if len(data) > settings.max_upload_bytes:
        raise LiveRefused(413, "too_large", f"the recording is larger than {settings.max_upload_bytes:,} bytes")
    try:
        info = sf.info(io.BytesIO(data))
    except Exception:     # libsndfile raises several types for what it cannot read
        raise LiveRefused(415, "not_audio", "this is not audio we can read (send wav, flac or ogg)") from None
    if info.samplerate <= 0 or info.frames <= 0:
        raise LiveRefused(415, "not_audio", "the audio has no samples")
    seconds = info.frames / info.samplerate
    if seconds > settings.max_utterance_s + 0.05:    # checked from the header, before decoding it all
        raise LiveRefused(413, "too_long", f"the recording is {seconds:.1f} s long; the limit is "
                                           f"{settings.max_utterance_s:g} s")
    try:
        samples, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception:
        raise LiveRefused(415, "not_audio", "this audio cannot be decoded") from None
    mono = samples.mean(axis=1)
    seconds = len(mono) / sr
    if seconds > settings.max_utterance_s + 0.05:
        raise LiveRefused(413, "too_long", f"the recording is {seconds:.1f} s long; the limit is "
                                           f"{settings.max_utterance_s:g} s")
    if seconds < settings.min_utterance_s:
        raise LiveRefused(422, "too_short", f"the recording is {seconds:.2f} s long; say at least a few words "
                                            f"(at least {settings.min_utterance_s:g} s)")
    if not np.all(np.isfinite(mono)):
        raise LiveRefused(415, "not_audio", "the audio holds invalid samples")
    if loudest_dbfs(mono, sr) < settings.silence_dbfs:
        raise LiveRefused(422, "silent", "the recording is silent: check the microphone and try again")
    return mono.astype(np.float32), int(sr)


def loudest_dbfs(mono: np.ndarray, sr: int, window_s: float = 0.05) -> float:
    """RMS level (dBFS) of the loudest 50 ms window."""
    n = max(1, int(sr * window_s))
    usable = len(mono) // n * n
    frames = mono[:usable].reshape(-1, n) if usable else mono.reshape(1, -1)
    rms = float(np.sqrt(np.max(np.mean(frames.astype(np.float64) ** 2, axis=1))))
    return 20 * math.log10(rms) if rms > 0 else -math.inf
