"""Where the project keeps what it derives once per machine (extracted models, embeddings): the user's own cache,
not a shared temporary folder another local user could plant a file in."""
from __future__ import annotations

import os
from pathlib import Path


def folder(name: str, setting: str) -> Path:
    """The folder named by the environment variable `setting`, else $XDG_CACHE_HOME (or ~/.cache)/empathy-arena/name."""
    configured = os.environ.get(setting, "").strip()
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "empathy-arena" / name
