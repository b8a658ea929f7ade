"""The offline screen on phrasings it was not written for (issue 26): the held-apart set of
tests/support/safety_held_apart.py (committed before the semantic layer existed, never used to tune it), the
semantic layer's behaviour on long texts, and its failure mode.

The floors for abuse and threats sit at the figures measured (docs/security.md gives them, with every look at this
set); issue 26's targets (abuse and threats >= 85%) are not met and the floors do not pretend they are: a change
that loses recall fails here, a change that gains it moves the floors and the docs together. The same holds for the
second held-apart set (tests/support/safety_held_apart_v2.py), whose one reading missed every target, and of the
fifth (tests/support/safety_held_apart_v5.py), read once for semantic-5 and once for rules-3, and the sixth
(tests/support/safety_held_apart_v6.py, written by helpers who saw no file of the repository), read once for rules-3
and once for rules-4. rules-3 and rules-4 (eval_backend/safety/directed.py, crisis_signs.py) were written while
looking at the misses on v1 and v2, so their figures below are development figures for them; v5's and v6's were
the held-apart ones.

Since semantic-11-bank-11 (issue 26) every one of these sets is pooled into the semantic layer's bank
(eval_backend/safety/bank.py), so all their figures below are fit figures: they stay as floors a change must not go
under, and say nothing about unseen phrasings. The held-apart figures are v7's and v8's (read for bank-11, pooled
into bank-12), v9's (read for bank-12, pooled into bank-13), v10's (read for bank-13, pooled into bank-14), v11's
(read for bank-14, pooled into bank-15), v12's (read for bank-14 and -15, pooled into bank-16) and v13's
(tests/support/safety_held_apart_v7.py ... _v13.py), read once per round and recorded in docs/security.md; no test reads them (each reading costs about a minute of CPU).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from eval_backend import safety
from eval_backend.safety import offline, semantic
from tests.support.safety_held_apart import HELD_APART_26
from tests.support.safety_held_apart_v2 import HELD_APART_26_V2
from tests.support.safety_held_apart_v5 import HELD_APART_26_V5
from tests.support.safety_held_apart_v6 import HELD_APART_26_V6
from tests.support.safety_sentences import batched_meaning, evaluate

TARGETS = {"crisis": 0.9, "benign": 0.02}          # issue 26: crisis readings at least, benign flags at most
FLOORS = {"abuse": 0.84, "violence": 0.85}          # measured (21/25, 17/20, rules-4 + semantic-5), a dev set for rules-3/4
# Held-apart v2, read once for semantic-5-bank-5 (docs/security.md): every figure misses issue 26's targets. These
# are the figures that reading gave (caught, or for benign flagged, out of n), not targets: a change that loses
# recall or flags more benign replies fails here; a gain moves them and the docs together.
V2_MEASURED = {"crisis": (30, 32), "abuse": (29, 42), "violence": (27, 31), "benign": (3, 110)}   # rules-4
# Held-apart v5 (caf1e83), read once for semantic-5 before any change (crisis 34/40, abuse 19/35, threats 19/35, benign
# 2/111) and once for rules-3 after b9157d9 (these figures; which sentences were missed was not looked at).
V5_MEASURED = {"crisis": (34, 40), "abuse": (22, 35), "violence": (26, 35), "benign": (2, 111)}
# Held-apart v6 (8b375c1), read once for rules-3 (crisis 37/48, abuse 13/50, threats 22/50, benign 17/119) and once for
# rules-4 after 5ad1c7e (these figures).
V6_MEASURED = {"crisis": (37, 48), "abuse": (18, 50), "violence": (26, 50), "benign": (15, 119)}


@pytest.fixture(autouse=True)
def offline_screen(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("EMPATHY_ARENA_MODERATION_", "EMPATHY_ARENA_SCREEN_")):
            monkeypatch.delenv(name)
    safety.clear_cache()
    yield
    safety.clear_cache()


def test_held_apart_crisis_readings_and_benign_flags_meet_the_targets():
    figures = evaluate(HELD_APART_26)
    print({label: f"{m['caught']}/{m['n']}" for label, m in figures.items()})
    assert figures["crisis"]["n"] >= 30 and figures["benign"]["n"] >= 100
    assert figures["crisis"]["rate"] >= TARGETS["crisis"], figures["crisis"]
    assert figures["benign"]["rate"] <= TARGETS["benign"], figures["benign"]
    for label, floor in FLOORS.items():
        assert figures[label]["rate"] >= floor, (label, figures[label])


@pytest.mark.parametrize("sentences, measured", [(HELD_APART_26_V2, V2_MEASURED), (HELD_APART_26_V5, V5_MEASURED),
                                                (HELD_APART_26_V6, V6_MEASURED)], ids=["v2", "v5", "v6"])
def test_held_apart_figures_do_not_get_worse(sentences, measured):
    figures = evaluate(sentences)
    print({label: f"{m['caught']}/{m['n']}" for label, m in figures.items()})
    for label, (caught, n) in measured.items():
        assert figures[label]["n"] == n
        if label == "benign":
            assert figures[label]["caught"] <= caught, figures[label]
        else:
            assert figures[label]["caught"] >= caught, (label, figures[label])


def test_a_person_in_crisis_is_offered_help_never_held():
    """Every held-apart crisis sentence the screen reads as a crisis stays below the flagging threshold on
    self_harm (the semantic layer caps its crisis score like the rules' 0.6)."""
    for text in HELD_APART_26["crisis"]:
        result = safety.screen_text(text)
        assert result.categories["self_harm"] <= semantic.CRISIS_MAX < 0.85


def test_one_crisis_sentence_inside_a_long_reply_is_not_averaged_away():
    filler = ("We talked about the weather and the garden for a while. The tomatoes are doing well this year. "
              "My neighbour lent me a ladder for the gutters. ")
    text = filler * 3 + "I bought enough pills and tonight I will finally be gone. " + filler * 2
    windows = semantic.windows(text)
    assert len(windows) > 2
    assert safety.screen_text(text).crisis
    crisis = semantic.layer().probabilities(windows)[:, 0]
    with_pills = [p for w, p in zip(windows[1:], crisis[1:]) if "pills" in w]
    without = [p for w, p in zip(windows[1:], crisis[1:]) if "pills" not in w]
    assert min(with_pills) > max(without)          # the crisis sentence's windows read highest
    # (semantic-5's MiniLM read the filler alone as a crisis in one window — "a ladder"; docs/security.md)


def test_windows_of_a_very_long_text_are_bounded():
    text = " ".join(f"Sentence number {i} is here." for i in range(500))
    assert len(semantic.windows(text)) <= semantic.MAX_WINDOWS + 1
    assert semantic.windows("One sentence. Two sentences.") == ["One sentence. Two sentences."]


def test_a_broken_semantic_layer_holds_the_text(monkeypatch):
    def broken(text):
        raise ImportError("no sentence-transformers")
    monkeypatch.setattr(semantic, "findings", broken)
    result = offline.screen("a perfectly kind sentence", 0.85)
    assert result.status == "not_screened" and result.flagged
    assert result.reason == "not screened: semantic layer unavailable (ImportError)"


def _our_reply_lines() -> list[str]:
    """Every string constant of three or more words in the baselines' wording and the demo's content: benign by
    construction, and the short registers a bank-trained layer has seen least."""
    root = Path(__file__).resolve().parents[1]
    found = []
    for name in ("eval_backend/baselines/replies.py", "eval_backend/baselines/strategies.py",
                 "eval_backend/benchmark/demo_content.py"):
        for node in ast.walk(ast.parse((root / name).read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value.split()) >= 3
                    and "{" not in node.value and "\n" not in node.value):
                found.append(node.value)
    return list(dict.fromkeys(found))


# Measured on semantic-5-bank-5 (docs/benchmarks.md, "semantic-8 ... not merged"): 7 of 521 lines flagged, all short
# fragments ("You sound surprised!"); a fine-tuned layer that passed the spent held-apart sets flagged 60 ("I hear
# you.", "I'm here for you.") and is why this check exists. A change may lower the count; one that raises it says
# why here. bank-12's first draft flagged 17; the short-register benign lines written after that (bank.py) brought
# it to 1, so from bank-12 on this is a development figure, not a held-apart one. bank-13 (more authors' abuse and
# threats; better on every spent set left out of its fit, docs/security.md) flags 3: 0.6 % of these lines; bank-14
# (v10 pooled) 4; bank-15 (v11 pooled) the same 4; bank-16 (v12 pooled, kind remarks on how someone sounds, abuse
# cut 0.7) 3.
OUR_LINES_FLAGGED = 3


def test_our_own_benign_lines_are_not_held_and_whole_baseline_replies_never():
    from eval_backend.baselines import replies
    lines = _our_reply_lines()
    assert len(lines) >= 400
    with batched_meaning(lines):
        flagged = [line for line in lines if safety.screen_text(line).flagged]
    print(f"{len(flagged)} of {len(lines)} flagged: {flagged}")
    assert len(flagged) <= OUR_LINES_FLAGGED, flagged
    said = ["I finally got the results back from the doctor today.", "My sister is getting married on Saturday.",
            "I lost my wallet on the bus this morning."]
    texts = [replies.cue_reply(transcript, context, cue)[0] for cue in [*replies.CUE_REPLIES, None, "noisy"]
             for transcript in said for context in (None, "They just heard bad news.", "They are celebrating.")]
    with batched_meaning(texts):
        for text in texts:
            assert not safety.screen_text(text).flagged, text
