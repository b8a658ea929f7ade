"""One screening service for everything the arena plays or publishes (issue 14).

`screen_text(text)` runs the configured screen (settings.py: the offline classifier + rules by default, an
OpenAI-compatible moderation endpoint when EMPATHY_ARENA_MODERATION_URL is set) and caches the decision by the
text's hash and the screen's name. `records` stores decisions and operator actions; `resources` holds the crisis
notice and the operator-editable list of help resources.
"""
from __future__ import annotations

from .core import CATEGORIES, CRISIS_THRESHOLD, ScreenResult
from .records import HeldItem, Screening
from .resources import crisis_notice_markdown, help_resources
from .service import clear_cache, screen_name, screen_text, warm

__all__ = ["CATEGORIES", "CRISIS_THRESHOLD", "HeldItem", "ScreenResult", "Screening", "clear_cache", "crisis_notice_markdown",
           "help_resources", "screen_name", "screen_text", "warm"]
