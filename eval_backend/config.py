"""Settings resolved from arguments, environment and files (no I/O at import)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .benchmark.demo_sizes import DEMO_SIZES

DATA_DIR_ENV = "EMPATHY_ARENA_DATA_DIR"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS_FILE = PROJECT_ROOT / "models.yaml"


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--data-dir beats EMPATHY_ARENA_DATA_DIR beats ./data."""
    chosen = explicit or os.environ.get(DATA_DIR_ENV) or "data"
    path = Path(chosen).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


FIRST_SLICE_ENV = "EMPATHY_ARENA_FIRST_SLICE"


def first_slice_size() -> int:
    """Spoken requests every baseline answers before their full run, so the arena opens early (0: no slice).
    12 with four baselines: the 48 replies that 24 requests gave two baselines."""
    raw = os.environ.get(FIRST_SLICE_ENV, "").strip()
    try:
        return max(0, int(raw)) if raw else 12
    except ValueError:
        raise ValueError(f"{FIRST_SLICE_ENV} must be a whole number (got {raw!r})") from None


DEMO_SIZE_ENV = "EMPATHY_ARENA_DEMO_SIZE"


def demo_size() -> str:
    """The size of the demo the Space builds into an empty data dir: compact (the default: bootstraps in
    under 6 min on 2 cores) or full (48 scripts, ~14 min); eval_backend/benchmark/demo.py: DEMO_SIZES."""
    raw = os.environ.get(DEMO_SIZE_ENV, "").strip() or "compact"
    if raw not in DEMO_SIZES:
        raise ValueError(f"{DEMO_SIZE_ENV} must be one of {', '.join(DEMO_SIZES)} (got {raw!r})")
    return raw


DATABASE_URL_ENV = "DATABASE_URL"


def database_url(explicit: str | None = None) -> str | None:
    """A postgresql:// URL selects PostgreSQL; unset (or empty) keeps the embedded SQLite."""
    url = explicit if explicit is not None else os.environ.get(DATABASE_URL_ENV, "")
    url = url.strip()
    if not url:
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError(f"{DATABASE_URL_ENV} must be a postgresql:// URL (got {redact_url(url)!r}); "
                         "leave it unset for the embedded SQLite store")
    return url


def redact_url(url: str) -> str:
    """The URL without its password, for logs."""
    return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1:***@", url)


@dataclass
class ModelSpec:
    """One entry of the models YAML: `models: [{name, base_url, model, api_key_env, audio_output, voice}]`."""
    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    audio_output: bool = False
    voice: str | None = None
    stream: bool = False           # streaming-only providers
    timeout_s: float = 60.0
    baseline: bool = False
    extra: dict = field(default_factory=dict)

    def api_key(self) -> str | None:
        """Read at call time so the key never sits in a stored object."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None


_KNOWN = {"name", "base_url", "model", "api_key_env", "audio_output", "voice", "stream", "timeout_s", "baseline"}


def load_models(path: str | os.PathLike | None = None) -> dict[str, ModelSpec]:
    path = Path(path) if path else DEFAULT_MODELS_FILE
    doc = yaml.safe_load(path.read_text()) or {}
    out: dict[str, ModelSpec] = {}
    for entry in doc.get("models", []):
        missing = [k for k in ("name", "base_url", "model") if not entry.get(k)]
        if missing:
            raise ValueError(f"{path}: a model entry lacks {', '.join(missing)}: {entry!r}")
        known = {k: v for k, v in entry.items() if k in _KNOWN}
        extra = {k: v for k, v in entry.items() if k not in _KNOWN}
        out[entry["name"]] = ModelSpec(**known, extra=extra)
    return out
