"""A stranger's long text costs the directed rules milliseconds, not seconds (issue 26): every repetition in
eval_backend/safety/directed.py is bounded. A first draft with two unbounded runs of degree words side by side took
22.7 s on 9,000 characters of "you are so so so ..."; the bound below is well above what all the rules take now
(at most 0.28 s on these texts, docs/benchmarks.md "rules-4") and far below that."""
from __future__ import annotations

import time

import pytest

from eval_backend.safety import directed, rules

HOSTILE = {
    "degree words": "you are " + "so " * 10_000 + "x",
    "articles": "you are such a " * 2_000,
    "describing words": "you are a " + "big, " * 6_000,
    "harm verbs": "I will " + "kill the " * 3_000,
    "rejection": "nobody could " * 3_000,
    "weapons": "I've got a knife " * 2_000,
    "quotes and negation": "'you are not useless' " * 1_500,
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_thirty_thousand_character_text_is_screened_in_well_under_a_second(name):
    text = HOSTILE[name]
    assert len(text) >= 20_000
    t0 = time.perf_counter()
    rules.findings(text)               # every rule, the directed ones and the crisis signs included
    directed.own_words(text)           # what the classifier reads
    assert time.perf_counter() - t0 < 1.0, name
