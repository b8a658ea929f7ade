"""The real recordings of `real_voices.csv` (labels, split, rationale: real_voices.md), read from the Debian
packages that install them. Nothing here is shipped audio: a recording whose package is missing is reported
missing, never replaced."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..audio.features import extract
from .cues import hear

CSV = Path(__file__).with_name("real_voices.csv")
ROOTS = {
    "pocketsphinx-testdata": Path("/usr/share/pocketsphinx/test/data"),
    "alsa-utils": Path("/usr/share/sounds/alsa"),
    "hedgewars-data": Path("/usr/share/games/hedgewars/Data/Sounds/voices"),
    "fillets-ng-data-cs": Path("/usr/share/games/fillets-ng/sound"),
}
RAW_SR = 16_000            # pocketsphinx's .raw files: 16 kHz, 16-bit little-endian, mono


@dataclass(frozen=True)
class Recording:
    id: str
    package: str
    licence: str
    group: str
    split: str                  # calibration | validation
    label: str
    words: str
    rationale: str

    @property
    def path(self) -> Path:
        return ROOTS[self.package] / self.id.split(":", 1)[1]

    def load(self) -> tuple[np.ndarray, int]:
        """(mono float32 samples, sample rate)."""
        if self.path.suffix == ".raw":
            return np.fromfile(self.path, dtype="<i2").astype(np.float32) / 32768.0, RAW_SR
        import soundfile as sf
        x, sr = sf.read(str(self.path), dtype="float32", always_2d=True)
        return x.mean(axis=1), int(sr)


def recordings(split: str | None = None) -> list[Recording]:
    with CSV.open(encoding="utf-8") as fh:
        rows = [Recording(**row) for row in csv.DictReader(fh)]
    return [r for r in rows if split is None or r.split == split]


def missing(rows: list[Recording]) -> list[str]:
    """Packages of `rows` whose files are not installed (apt-get install them: packages-test.txt)."""
    return sorted({r.package for r in rows if not r.path.is_file()})


# Which claims are right for which label (real_voices.md). `raised` was added after reading the calibration rows
# only (the game's cheers are shouted as loudly as its warnings), before any validation row was measured.
RIGHT_FOR: dict[str, frozenset[str]] = {
    "laughter": frozenset({"laughter"}),
    "raised": frozenset({"shout", "effort", "taunt", "cheer"}),
    "whisper": frozenset(), "fast": frozenset(), "slow": frozenset(),
}
UNJUDGED = frozenset({"acted", "exclaimed"})     # no label fits well enough to judge a claim on these


@dataclass
class Tally:
    """The targets' figures over one split: claims on neutral recordings, and how many claims were right."""
    neutral: int = 0
    neutral_claimed: int = 0
    claims: int = 0
    right: int = 0
    unjudged_claims: int = 0
    per_label: dict = field(default_factory=dict)   # label -> {"n", "claimed", "right"}
    wrong: list = field(default_factory=list)       # (id, label, claims)

    @property
    def neutral_claim_rate(self) -> float | None:
        return self.neutral_claimed / self.neutral if self.neutral else None

    @property
    def precision(self) -> float | None:
        return self.right / self.claims if self.claims else None


def tally(heard: list[tuple[Recording, tuple[str, ...]]]) -> Tally:
    """Score (recording, claims) pairs: a recording with any claim counts once; each claim is right or wrong."""
    t = Tally()
    for rec, claims in heard:
        row = t.per_label.setdefault(rec.label, {"n": 0, "claimed": 0, "right": 0})
        row["n"] += 1
        row["claimed"] += bool(claims)
        if rec.label == "neutral":
            t.neutral += 1
            t.neutral_claimed += bool(claims)
        if rec.label in UNJUDGED:
            t.unjudged_claims += len(claims)
            continue
        for c in claims:
            t.claims += 1
            ok = rec.label in RIGHT_FOR.get(c, frozenset())
            t.right += ok
            row["right"] += ok
            if not ok:
                t.wrong.append((rec.id, rec.label, claims))
    return t


def hear_recording(rec: Recording, transcriber) -> tuple[tuple[str, ...], dict]:
    """(claims, confidences) of the detector on one recording, as the engine hears a clip."""
    import hashlib

    samples, sr = rec.load()
    words = transcriber.transcribe(hashlib.sha256(samples.tobytes()).hexdigest(), samples, sr)
    h = hear(extract(samples, sr), words)
    return h.claims, h.confidence
