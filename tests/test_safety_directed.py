"""The directed rules (eval_backend/safety/directed.py, issue 26): contempt without an insult word and veiled threats
are held; the same words retold, quoted, denied, named as a feeling, teased or about a game are not.

The sentences here were written for this test (none is from the bank, a dev set or a held-apart set).
"""
from __future__ import annotations

import os

import pytest

from eval_backend import safety
from eval_backend.safety import crisis_signs, directed, rules
from tests.support.safety_sentences import benign_probe


CONTEMPT = [
    "You are such a pathetic excuse for a parent.",
    "Honestly you're so boring it hurts to listen.",
    "Nobody could ever stand being around you.",
    "Everyone at the party laughs at you behind your back.",
    "What a useless clown.",
    "Oh, get over yourself.",
    "People like you deserve to be alone.",
    "No wonder your wife left.",
    "Your parents must be so ashamed of you.",
    "ur such a lazy waste of oxygen",
    "You\u2019re a spineless, miserable little coward.",
]
THREATS = [
    "Nice bike. Shame if something happened to it.",
    "You'd better sleep with one eye open.",
    "I know where your kids go to school.",
    "I'm going to smash your face in.",
    "I'm bringing a knife round to your place.",
    "Your days are numbered.",
    "Keep talking and you'll end up in a ditch.",
    "Don't be surprised if a brick comes through your window.",
]
NOT_HARM = [
    "He told you you're worthless, and that is not true.",
    "You are not a burden, not to me and not to them.",
    "It sounds like you're feeling useless today, which is a heavy thing to carry.",
    "When she said 'I know where you live', that was a threat, and the police should hear about it.",
    "I'll beat you at chess tonight, just you wait.",
    "Saying goodbye to your dog is one of the hardest things there is.",
    "You're allowed to rest. Nobody expects you to be perfect.",
    "People who call you stupid are telling you about themselves.",
    "You're such a dork, and I love it.",
    "I'll be outside your office at six to drive you home.",
]


@pytest.mark.parametrize("text", CONTEMPT)
def test_contempt_without_an_insult_word_is_held(text):
    assert [f.label for f in directed.findings(text)] == ["contempt"]
    assert any(f.category == "abuse" and f.score >= 0.85 for f in rules.findings(text))


@pytest.mark.parametrize("text", THREATS)
def test_veiled_threats_are_held(text):
    assert "veiled threat" in [f.label for f in directed.findings(text)]
    assert any(f.category == "violence" and f.score >= 0.85 for f in rules.findings(text))


@pytest.mark.parametrize("text", NOT_HARM)
def test_retold_quoted_denied_felt_teased_and_game_words_are_not(text):
    assert directed.findings(text) == []


def test_six_hundred_kind_replies_written_apart_get_no_directed_finding():
    lines = benign_probe()
    assert len(lines) == 600
    assert [ln for ln in lines if directed.findings(ln)] == []


CRISIS_SIGNS = [
    "By the time you read this I'll be somewhere quiet.",
    "Can you make sure someone walks my dog after tonight?",
    "i looked up how high the car park is and whether you'd survive the drop",
    "I've been saving up my sleeping pills for a while now.",
    "Thank you for everything you did for me. Goodbye.",
]
NOT_CRISIS = [
    "I'm gone for the weekend, so feed the cat on Saturday please.",
    "How many ibuprofen tablets can I take in a day for a toothache?",
    "I won't be around next week, I'm at my sister's wedding.",
    "I wrote a letter to my grandad for his birthday.",
]


@pytest.mark.parametrize("text", CRISIS_SIGNS)
def test_indirect_crisis_signs_give_the_notice_never_a_hold(text):
    found = [f for f in rules.findings(text) if f.category == "self_harm"]
    assert [f.label for f in found] in (["crisis sign"], ["crisis phrasing"])
    assert all(0.5 <= f.score < 0.85 for f in found)


@pytest.mark.parametrize("text", NOT_CRISIS)
def test_plans_and_questions_that_share_their_words_are_not_crisis_signs(text):
    assert not crisis_signs.crisis_sign(text)


@pytest.mark.parametrize("text, kept", [
    ("He called you a useless fat cow? That's abuse.", "That's abuse."),
    ("When she said \"you'll never amount to anything,\" she lied. You are doing fine.", "You are doing fine."),
    ("You're not stupid for trusting him.", "You're"),
    ("You are a worthless idiot.", "You are a worthless idiot."),
    ("You're not human, you're garbage.", "you're garbage."),
])
def test_the_classifier_reads_the_texts_own_words(text, kept):
    own = " ".join(directed.own_words(text).split())
    assert kept in own
    assert not any(w in own for w in ("cow", "amount", "stupid", "human")), own


def test_a_retold_insult_is_not_held_and_one_said_is(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("EMPATHY_ARENA_MODERATION_", "EMPATHY_ARENA_SCREEN_")):
            monkeypatch.delenv(name)
    safety.clear_cache()
    assert not safety.screen_text("Your boss calling you an idiot in a meeting is bullying; tell HR.").flagged
    assert not safety.screen_text("You're not stupid for trusting him. He lied to you.").flagged
    assert safety.screen_text("You are a stupid idiot and I'm sick of you.").flagged
    safety.clear_cache()


@pytest.mark.parametrize("text", ["You're not special, you're just loud.", "It's adorable that you think anyone cares."])
def test_sneers_dressed_as_denials_or_compliments_are_held(text):
    assert [f.label for f in directed.findings(text)] == ["contempt"]


def test_the_rules_version_names_the_directed_rules():
    assert rules.VERSION == "rules-6"      # rules-4: the directed rules; rules-5 and 6: helpline numbers
