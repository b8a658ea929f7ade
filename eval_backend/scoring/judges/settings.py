"""Judge settings: `judge:` / `audio_judge:` entries of a scoring settings dict or a judge YAML (see the
package doc for the keys), and what the results manifest records about them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..judge_prompts import PROMPTS

DEFAULT_CALLS_PER_DAY = 1000
BUDGET_REACHED = "judge budget reached: {limit} calls per UTC day to {model}; no further call until 00:00 UTC"


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = 0
    n: int = 1                    # samples averaged per item
    max_retries: int = 2          # extra attempts after an unreadable / out-of-range answer or a failed call
    timeout_s: float = 60.0
    max_tokens: int = 600
    concurrency: int = 4
    # budget: HTTP calls per UTC day to this judge model, counted in the judge cache file (so every process
    # and every judge path on one data dir shares it); retries count. 0 or None: no limit.
    calls_per_day: int | None = DEFAULT_CALLS_PER_DAY

    def public(self) -> dict:
        """What the results manifest records (never the key itself)."""
        return {"base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "seed": self.seed, "n": self.n, "max_retries": self.max_retries}


_FIELDS = set(JudgeSettings.__dataclass_fields__)


def parse_settings(entry: Any, where: str) -> JudgeSettings | None:
    if not entry:
        return None
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = set(entry) - _FIELDS
    if unknown:
        raise ValueError(f"{where}: unknown judge setting(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    missing = [k for k in ("base_url", "model") if not entry.get(k)]
    if missing:
        raise ValueError(f"{where}: judge needs {', '.join(missing)}")
    s = JudgeSettings(**entry)
    if s.n < 1 or s.max_retries < 0:
        raise ValueError(f"{where}: n must be >= 1 and max_retries >= 0")
    if s.calls_per_day is not None and (isinstance(s.calls_per_day, bool) or not isinstance(s.calls_per_day, int)
                                        or s.calls_per_day < 0):
        raise ValueError(f"{where}: calls_per_day must be a whole number >= 0 (0: no limit)")
    return s


def judge_settings(settings: dict | None) -> tuple[JudgeSettings | None, JudgeSettings | None]:
    """(text judge, audio judge) from scoring settings: keys `judge`, `audio_judge`, or `judge_config` (YAML path)."""
    settings = dict(settings or {})
    if settings.get("judge_config"):
        doc = yaml.safe_load(Path(settings["judge_config"]).read_text()) or {}
        settings = {**doc, **{k: v for k, v in settings.items() if k in ("judge", "audio_judge")}}
    return (parse_settings(settings.get("judge"), "judge"),
            parse_settings(settings.get("audio_judge"), "audio_judge"))


def judge_manifest(settings: dict | None) -> dict:
    """Judge models and prompt hashes for the results manifest."""
    text, audio = judge_settings(settings)
    return {
        "text_judge": text.public() if text else None,
        "audio_judge": audio.public() if audio else None,
        "prompts": {name: {"version": p.version, "hash": p.hash, "audio": p.audio} for name, p in PROMPTS.items()},
    }
