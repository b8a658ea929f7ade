"""A battle clip's URL: the battle id and the clip's slot, never a path or a name (served by arena/web/media.py)."""
from __future__ import annotations

BATTLE_PREFIX = "/api/arena/audio"


def battle_clip_url(battle_id: str, clip: str) -> str:
    return f"{BATTLE_PREFIX}/{battle_id}/{clip}"
