"""The offline screen (default): the `alt-profanity-check` classifier (MIT; a linear model trained on offensive
language, shipped inside the PyPI package, loaded from disk — no network), our rules (rules.py) and the semantic
layer (semantic.py: MPNet sentence embeddings against a labelled example bank).

The classifier gives one number, "offensive or not", for the text's own words (directed.own_words: not what it
quotes, retells or denies); it becomes the abuse score. It cannot tell hate from
abuse, nor see phone numbers or distress, which is why the rules exist; the rules match words, so the semantic
layer reads meaning (indirect crisis statements, insults without a swear word, threats in other words).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable
from importlib import metadata

from ..loaded_once import loaded_once
from . import directed, rules, semantic
from .core import Finding, ScreenResult, Thresholds, combine, not_screened

PACKAGE = "alt-profanity-check"


@lru_cache(maxsize=1)
def package_version() -> str:
    """The installed package's version (fixed for the life of the process; cached: screen_text names the
    screen on every call)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "missing"


def screen_name() -> str:
    return f"offline:{PACKAGE}-{package_version()}+{rules.VERSION}+{semantic.VERSION}"


@loaded_once
def _predict():
    """The classifier's predict_prob, loaded once (importing scikit-learn and the model takes seconds)."""
    from profanity_check import predict_prob
    return predict_prob


def classifier_score(text: str) -> float:
    return float(_predict()([text])[0])


def screen(text: str, threshold: float, required: bool = True,
           read_meaning: Callable[[str], list[Finding]] | None = None) -> ScreenResult:
    """`read_meaning(text)`: the semantic layer's findings (default semantic.findings; tuning passes other cut-offs)."""
    name = screen_name()
    try:
        own = directed.own_words(text)
        score = classifier_score(own) if own.strip() else 0.0
    except Exception as exc:       # a missing or broken package must hold, never pass, the item
        return not_screened(name, f"classifier unavailable ({type(exc).__name__})", required)
    try:
        meaning = (read_meaning or semantic.findings)(text) if text.strip() else []
    except Exception as exc:       # the model or scikit-learn missing: held, as for the classifier
        return not_screened(name, f"semantic layer unavailable ({type(exc).__name__})", required)
    findings = [Finding("abuse", score, "classifier")] + rules.findings(text) + meaning
    return combine(findings, Thresholds(default=threshold), name)
