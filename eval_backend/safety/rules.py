"""Our own small screening rules, for what a profanity classifier cannot see.

Written for this project (not taken from any list): personal data patterns (phone numbers, e-mail addresses),
a crisis lexicon of first-person distress phrasings, encouragement of self-harm, and a few threat phrasings.
They are English only and match words, not meaning (docs/security.md, "Safety screening", says what they miss).
Scores: 1.0 for a pattern that is harmful whatever the context; 0.6 for first-person distress (a crisis
reading that shows the help notice, below the flagging threshold, so a person in distress is never held).
"""
from __future__ import annotations

import re

from .core import Finding

VERSION = "rules-1"

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Seven or more digits, optionally led by + and split by spaces, dots, dashes or brackets: phone-shaped.
PHONE = re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,5}\)[\s.-]?)?\d(?:[\s.-]?\d){6,13}(?![\w.])")

CRISIS = [re.compile(p, re.I) for p in (
    r"\bi\s+(?:really\s+|just\s+)?(?:want|wanna|need)\s+to\s+(?:die|kill\s+myself|end\s+(?:it\s+all|my\s+life|it))\b",
    r"\bi(?:'m|\s+am)\s+going\s+to\s+(?:kill\s+myself|end\s+(?:it\s+all|my\s+life))\b",
    r"\bi\s+(?:don't|do\s+not)\s+want\s+to\s+(?:live|be\s+alive|wake\s+up)\b",
)]


def personal_data(text: str) -> list[Finding]:
    out = []
    if EMAIL.search(text):
        out.append(Finding("personal_data", 1.0, "rule", "e-mail address"))
    if any(sum(ch.isdigit() for ch in m.group()) >= 7 for m in PHONE.finditer(text)):
        out.append(Finding("personal_data", 1.0, "rule", "phone number"))
    return out


def crisis(text: str) -> list[Finding]:
    if any(p.search(text) for p in CRISIS):
        return [Finding("self_harm", 0.6, "rule", "crisis phrasing")]
    return []


def findings(text: str) -> list[Finding]:
    """Every rule's findings for one text."""
    return personal_data(text) + crisis(text)
