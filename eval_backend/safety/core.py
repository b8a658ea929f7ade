"""The pure core of screening: our categories, one result type, and how scores from several sources combine.

No I/O and no model here, so the adapters (offline classifier + rules, remote moderation endpoint) and the
tests share one definition of "flagged", "crisis" and the reason text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

CATEGORIES = ("abuse", "hate", "sexual", "self_harm", "violence", "personal_data")

# A self_harm score at or above this reads as a crisis (first-person distress scores 0.6 in the rules, below the
# flagging threshold, so a user saying they want to die is offered help, not held). One place for this fact.
CRISIS_THRESHOLD = 0.5

STATUSES = ("screened", "not_screened")


@dataclass(frozen=True)
class ScreenResult:
    """One screening decision. `flagged` is True when any category reaches its threshold, or when the text could
    not be screened and screening is required (status "not_screened")."""
    flagged: bool
    crisis: bool
    categories: dict[str, float]
    reason: str
    screen: str
    status: str = "screened"

    def to_dict(self) -> dict:
        return {"flagged": self.flagged, "crisis": self.crisis, "categories": dict(self.categories),
                "reason": self.reason, "screen": self.screen, "status": self.status}


@dataclass
class Finding:
    """One source's score for one category, with the words that explain it (never the matched text itself:
    a reason is shown to operators and may be logged; it must not repeat a phone number)."""
    category: str
    score: float
    source: str          # "classifier", "rule", "remote"
    label: str = ""      # e.g. "phone number"; empty -> the category's name

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}")
        self.score = min(1.0, max(0.0, float(self.score)))


@dataclass
class Thresholds:
    """Per-category flagging thresholds (scores at or above flag)."""
    default: float = 0.85
    per_category: dict[str, float] = field(default_factory=dict)

    def of(self, category: str) -> float:
        return self.per_category.get(category, self.default)


def combine(findings: list[Finding], thresholds: Thresholds, screen: str, *, crisis_hint: bool = False) -> ScreenResult:
    """Each category's score is the highest any source gave; the reason lists the findings that flag (or, for
    self_harm, that read as a crisis), strongest first."""
    scores = {c: 0.0 for c in CATEGORIES}
    for f in findings:
        scores[f.category] = max(scores[f.category], f.score)
    flagged = any(scores[c] >= thresholds.of(c) for c in CATEGORIES)
    crisis = crisis_hint or scores["self_harm"] >= CRISIS_THRESHOLD
    shown = [f for f in findings if f.score >= thresholds.of(f.category)
             or (f.category == "self_harm" and f.score >= CRISIS_THRESHOLD)]
    parts, seen = [], set()
    for f in sorted(shown, key=lambda f: -f.score):
        text = f"{f.label or f.category} {f.score:.2f} ({f.source})"
        if text not in seen:
            seen.add(text)
            parts.append(text)
    if crisis and not any("self_harm" in p or "crisis" in p for p in parts):
        parts.append("crisis reading")
    return ScreenResult(flagged=flagged, crisis=crisis, categories={c: round(scores[c], 4) for c in CATEGORIES},
                        reason="; ".join(parts), screen=screen)


def not_screened(screen: str, why: str, required: bool = True) -> ScreenResult:
    """The text could not be screened (`why` is a failure class, never a remote body). Required screening
    holds the item: flagged=True."""
    return ScreenResult(flagged=required, crisis=False, categories={c: 0.0 for c in CATEGORIES},
                        reason=f"not screened: {why}", screen=screen, status="not_screened")
