"""Screening settings, read from the environment at call time (one place for every EMPATHY_ARENA_MODERATION_* and
EMPATHY_ARENA_SCREEN_* variable; README's settings table documents them)."""
from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_MODEL = "omni-moderation-latest"


@dataclass(frozen=True)
class ScreenSettings:
    url: str | None            # an OpenAI-compatible moderation server; None -> the offline screen
    model: str
    api_key_env: str | None    # the NAME of the variable holding the key (the key itself is never a setting)
    timeout_s: float
    threshold: float
    required: bool             # unavailable screening holds the item (flagged=True)

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


def _float(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def load() -> ScreenSettings:
    required = os.environ.get("EMPATHY_ARENA_SCREEN_REQUIRED", "1").strip()
    if required not in ("0", "1"):
        raise ValueError(f"EMPATHY_ARENA_SCREEN_REQUIRED must be 0 or 1, not {required!r}")
    return ScreenSettings(
        url=(os.environ.get("EMPATHY_ARENA_MODERATION_URL", "").strip().rstrip("/") or None),
        model=os.environ.get("EMPATHY_ARENA_MODERATION_MODEL", "").strip() or DEFAULT_MODEL,
        api_key_env=os.environ.get("EMPATHY_ARENA_MODERATION_API_KEY_ENV", "").strip() or None,
        timeout_s=_float("EMPATHY_ARENA_MODERATION_TIMEOUT_S", 10.0, 0.1, 600.0),
        threshold=_float("EMPATHY_ARENA_SCREEN_THRESHOLD", 0.85, 0.01, 1.0),
        required=required == "1",
    )
