"""How much one reply may be: bytes of body, seconds of audio, characters of text.

The client enforces these while the body streams in (nothing past the cap is read), so a reply of
300 MB or an endless stream costs at most `max_body_bytes` of reading and a bounded multiple of it in
memory (parsing, base64, the wav decode). A reply over any cap fails with the class `too_large`.

`show_body` says whether an error message may quote the reply body (clipped, API key redacted): yes for
the operator's own models (models.yaml, where the excerpt helps debugging), never for submitted
endpoints, whose messages reach the submitter (a body could be any internal page the endpoint reached).

The defaults live here; the submission settings (submissions/settings.py) read the environment into them.
"""
from __future__ import annotations

from dataclasses import dataclass

MiB = 2 ** 20


@dataclass(frozen=True)
class ReplyLimits:
    max_body_bytes: int = 8 * MiB       # 120 s of 24 kHz 16-bit wav is 7.7 MB as base64
    max_audio_s: float = 120.0          # seconds of reply audio
    max_text_chars: int = 20_000        # characters of reply text, and of its transcript
    show_body: bool = True              # quote (clipped, redacted) body excerpts in error messages

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024 or self.max_audio_s <= 0 or self.max_text_chars < 1:
            raise ValueError(f"reply limits must be positive (body at least 1 KiB): {self}")

    @property
    def max_raw_chars(self) -> int:
        """The stored raw body (audio removed): text and transcript plus 64 KiB of everything else."""
        return 2 * self.max_text_chars + 64 * 1024


DEFAULT = ReplyLimits()
SUBMITTED = ReplyLimits(show_body=False)
