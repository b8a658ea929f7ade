"""Flags reply text that names a model or vendor: such a reply would unblind a battle, so it is never served
(arena/services/battles.py builds the battle index with it; arena/services/live.py screens live replies with it)."""
from __future__ import annotations

import re
from typing import Iterable


class IdentityScreen:
    """Flags reply text that names a model or vendor (it would unblind the battle)."""

    def __init__(self, patterns: Iterable[str], model_names: Iterable[str] = ()):
        parts = list(patterns)
        for name in model_names:
            # "warm-model" also matches "warm model" / "warm_model"
            tokens = [re.escape(t) for t in re.split(r"[-_\s/.:]+", name) if t]
            if tokens:
                parts.append(r"\b" + r"[-_\s/.:]*".join(tokens) + r"\b")
        self.regex = re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE) if parts else None

    def leaks(self, *texts: str | None) -> bool:
        return bool(self.regex) and any(t and self.regex.search(t) for t in texts)
