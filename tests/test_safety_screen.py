"""The offline safety screen (issue 14): the shipped classifier plus our rules, judged on our own labelled sentences,
and the pieces around it (core, cache, settings, help resources, the `screen` CLI)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_backend import safety
from eval_backend.safety import core, offline, rules, semantic, service
from eval_backend.scoring import mpnet
from tests.support.safety_sentences import DEV, HELD_APART, evaluate

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def offline_screen(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("EMPATHY_ARENA_MODERATION_", "EMPATHY_ARENA_SCREEN_", "EMPATHY_ARENA_HELP_")):
            monkeypatch.delenv(name)
    safety.clear_cache()
    yield
    safety.clear_cache()


# ---------------------------------------------------------------- quality on our labelled sentences
def _report(name: str, figures: dict) -> str:
    return f"{name}: " + ", ".join(f"{label} {m['caught']}/{m['n']}" for label, m in figures.items())


def test_dev_sentences_recall_and_benign_false_flags():
    """The rules were written while looking at DEV: these figures are optimistic (docs/security.md)."""
    figures = evaluate(DEV)
    print(_report("DEV", figures))
    assert figures["benign"]["n"] >= 40
    assert figures["benign"]["rate"] <= 0.05, "benign empathetic replies must rarely be flagged"
    for label in ("abuse", "hate", "crisis", "personal_data", "violence"):
        assert figures[label]["rate"] >= 0.9, (label, figures[label])


def test_held_apart_sentences_recall_and_benign_false_flags():
    """HELD_APART was not used to write the rules; the floors sit below the figures measured when the rules were
    frozen (docs/security.md gives them) so a rule change that loses recall fails here."""
    figures = evaluate(HELD_APART)
    print(_report("HELD_APART", figures))
    assert figures["benign"]["n"] >= 40
    assert figures["benign"]["rate"] <= 0.05
    floors = {"abuse": 0.6, "hate": 0.6, "crisis": 0.45, "personal_data": 0.9, "violence": 0.75}
    for label, floor in floors.items():
        assert figures[label]["rate"] >= floor, (label, figures[label])


def test_a_person_in_distress_gets_the_crisis_reading_without_a_self_harm_flag():
    result = safety.screen_text("I don't want to live anymore.")
    assert result.crisis and result.categories["self_harm"] == pytest.approx(0.6)
    assert "crisis phrasing" in result.reason
    urged = safety.screen_text("Just go kill yourself.")
    assert urged.flagged and urged.categories["self_harm"] == 1.0 and urged.categories["abuse"] == 1.0


def test_reason_names_what_was_found_never_the_personal_data_itself():
    result = safety.screen_text("Ring me on +44 7700 900461 or write to sam.k@example.org")
    assert result.flagged and result.categories["personal_data"] == 1.0
    assert "phone number" in result.reason and "e-mail address" in result.reason
    assert "7700" not in result.reason and "example.org" not in result.reason


@pytest.mark.parametrize("text", ["Pi is 3.14159265.", "We met on 2019-04-12 and again on 12.03.2024.",
                                  "That was 1,000,000 people.", "I'll break it to you gently.",
                                  "I will get you some water."])
def test_numbers_and_figures_of_speech_that_are_not_flagged(text):
    assert not safety.screen_text(text).flagged


# ---------------------------------------------------------------- core
def test_combine_takes_each_category_highest_score_and_flags_at_its_threshold():
    findings = [core.Finding("abuse", 0.4, "classifier"), core.Finding("abuse", 0.9, "rule", "insult"),
                core.Finding("hate", 0.7, "rule")]
    result = core.combine(findings, core.Thresholds(default=0.85, per_category={"hate": 0.7}), "t")
    assert result.categories["abuse"] == 0.9 and result.flagged
    assert result.reason == "insult 0.90 (rule); hate 0.70 (rule)"
    clean = core.combine([core.Finding("abuse", 0.84, "classifier")], core.Thresholds(default=0.85), "t")
    assert not clean.flagged and clean.reason == "" and set(clean.categories) == set(safety.CATEGORIES)
    with pytest.raises(ValueError):
        core.Finding("spam", 1.0, "rule")


def test_not_screened_is_held_when_screening_is_required():
    held = core.not_screened("s", "timeout")
    assert held.flagged and held.status == "not_screened" and held.reason == "not screened: timeout"
    assert not core.not_screened("s", "timeout", required=False).flagged


# ---------------------------------------------------------------- offline adapter
def test_screen_name_carries_the_package_and_rules_versions():
    safety.warm()                                  # loads the classifier; harmless when already loaded
    assert safety.screen_text("hello").screen == (f"offline:alt-profanity-check-1.9.1+{rules.VERSION}"
                                                  f"+{semantic.VERSION}")


def test_classifier_loads_and_scores_without_network(tmp_path):
    """The models ship inside the wheels (the classifier; the five archive parts of the semantic layer's MPNet):
    extracting the encoder into an empty model cache, loading both and fitting the layer with every socket refused
    still works."""
    code = ("import socket\n"
            "def refuse(*a, **k):\n    raise OSError('network refused by test')\n"
            "socket.socket.connect = refuse\nsocket.create_connection = refuse\nsocket.getaddrinfo = refuse\n"
            "from eval_backend.safety import offline\n"
            "print(offline.classifier_score('you are a worthless idiot'), offline.classifier_score('I am sorry'))\n"
            "from eval_backend.safety import semantic\n"
            "print(semantic.scores('I gave my cat to my neighbour, I will not be needing her')['crisis'],"
            " semantic.scores('I am so sorry about your cat')['crisis'])")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["EMPATHY_ARENA_MODEL_CACHE"] = str(tmp_path / "models")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=env)                  # no offline flags: only the refused network stops a download
    assert out.returncode == 0, out.stderr[-2000:]
    insult, kind, crisis, sorry = map(float, out.stdout.split()[-4:])
    assert insult > 0.9 > 0.2 > kind
    assert crisis >= semantic.CRISIS_CUT > sorry
    assert [p.name for p in (tmp_path / "models").iterdir()] == [f"all-mpnet-base-v2-{mpnet.WEIGHTS_SHA256[:16]}"]


def test_a_broken_classifier_holds_the_text(monkeypatch):
    def broken():
        raise ImportError("no profanity_check")
    monkeypatch.setattr(offline, "_predict", broken)
    result = safety.screen_text("a perfectly kind sentence")
    assert result.status == "not_screened" and result.flagged
    assert result.reason == "not screened: classifier unavailable (ImportError)"
    monkeypatch.setenv("EMPATHY_ARENA_SCREEN_REQUIRED", "0")
    assert not safety.screen_text("a perfectly kind sentence").flagged


# ---------------------------------------------------------------- cache and settings
def test_cache_screens_a_text_once_per_screen_and_never_keeps_failures(monkeypatch):
    calls = []
    real = offline.screen

    def counting(text, threshold, required=True):
        calls.append(text)
        return real(text, threshold, required)
    monkeypatch.setattr(offline, "screen", counting)
    safety.screen_text("You poor thing.")
    safety.screen_text("You poor thing.")
    assert calls == ["You poor thing."]
    monkeypatch.setenv("EMPATHY_ARENA_SCREEN_THRESHOLD", "0.5")      # another decision rule: screened again
    safety.screen_text("You poor thing.")
    assert len(calls) == 2

    monkeypatch.setattr(offline, "screen", lambda text, threshold, required=True: core.not_screened("x", "boom"))
    assert safety.screen_text("fresh text").status == "not_screened"
    monkeypatch.setattr(offline, "screen", counting)
    assert safety.screen_text("fresh text").status == "screened"


def test_long_texts_are_clipped_before_screening(monkeypatch):
    seen = []
    monkeypatch.setattr(offline, "screen", lambda text, threshold, required=True: seen.append(text) or
                        core.combine([], core.Thresholds(), "x"))
    safety.screen_text("a" * 100_000 + " you idiot")
    assert len(seen[0]) == service.MAX_TEXT_CHARS + 1 + 2000 and seen[0].endswith("you idiot")


@pytest.mark.parametrize("name,value", [("EMPATHY_ARENA_SCREEN_THRESHOLD", "high"),
                                        ("EMPATHY_ARENA_SCREEN_THRESHOLD", "1.5"),
                                        ("EMPATHY_ARENA_SCREEN_REQUIRED", "yes"),
                                        ("EMPATHY_ARENA_MODERATION_TIMEOUT_S", "0")])
def test_bad_settings_are_refused_with_the_variable_named(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        safety.screen_text("hello")


# ---------------------------------------------------------------- help resources and the notice
def test_help_resources_lead_with_the_directory_and_use_https():
    entries = safety.help_resources()
    assert entries[0]["directory"] and entries[0]["url"] == "https://findahelpline.com"
    assert all(e["url"].startswith("https://") for e in entries)
    assert any("befrienders" in e["url"] for e in entries) and any("iasp" in e["url"] for e in entries)
    assert all(e.get("region") for e in entries if e.get("phone")), "a phone number must say where it works"


def test_crisis_notice_is_calm_lists_the_resources_and_renders_operator_text_inert(tmp_path, monkeypatch):
    notice = safety.crisis_notice_markdown()
    assert "findahelpline.com" in notice and "emergency number" in notice
    assert "keep using" in notice                       # it does not block
    custom = tmp_path / "help.json"
    custom.write_text(json.dumps({"resources": [
        {"name": "Local line <script>alert(1)</script> [x](javascript:alert(1))", "url": "https://help.example",
         "region": "Testland", "phone": "0800 000"}]}))
    monkeypatch.setenv("EMPATHY_ARENA_HELP_RESOURCES", str(custom))
    assert [e["region"] for e in safety.help_resources()] == ["Testland"]
    notice = safety.crisis_notice_markdown()
    assert "<script>" not in notice and "](javascript:" not in notice and "https://help.example" in notice


def test_a_bad_resources_file_is_refused_and_the_notice_falls_back_to_the_directory(tmp_path, monkeypatch):
    bad = tmp_path / "help.json"
    bad.write_text(json.dumps({"resources": [{"name": "x", "url": "http://plain.example"}]}))
    monkeypatch.setenv("EMPATHY_ARENA_HELP_RESOURCES", str(bad))
    with pytest.raises(ValueError, match="https://"):
        safety.help_resources()
    assert "findahelpline.com" in safety.crisis_notice_markdown()


# ---------------------------------------------------------------- CLI
def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "eval_backend", "screen", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def test_cli_screen_json():
    out = _cli("--text", "I want to end my life. Call me on 07700 900123.", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    answer = json.loads(out.stdout)
    assert answer["flagged"] is True and answer["crisis"] is True
    assert answer["categories"]["personal_data"] == 1.0 and set(answer["categories"]) == set(safety.CATEGORIES)
    assert answer["status"] == "screened" and answer["screen"].startswith("offline:alt-profanity-check")
    clean = json.loads(_cli("--text", "I'm sorry your cat died.", "--json").stdout)
    assert clean["flagged"] is False and clean["crisis"] is False and clean["reason"] == ""


def test_cli_plain_text_and_bad_setting():
    out = _cli("--text", "you worthless idiot")
    assert out.returncode == 0 and out.stdout.startswith("flagged") and "screen: offline:" in out.stdout
    bad = _cli("--text", "hi", env={"EMPATHY_ARENA_SCREEN_THRESHOLD": "lots"})
    assert bad.returncode == 2 and "EMPATHY_ARENA_SCREEN_THRESHOLD" in bad.stdout


@pytest.mark.parametrize("text,flagged", [
    ("What a brave choice, crying about it.", False),        # sarcasm
    ("you 1d10t", False),                                     # spelling tricks
    ("Je veux mourir.", False),                               # not English
    ("You are not an idiot.", False),                         # a denial: own_words keeps it from the classifier
    ("He said immigrants are criminals and that hurt you.", True),   # quoting is not told from saying
    ("Your order number is 48213377.", True),                 # any 7+ digit run reads as a phone number
])
def test_the_misses_docs_security_md_states_are_still_true(text, flagged):
    """docs/security.md ("Safety screening") lists what the offline screen gets wrong; if one of these changes, the
    docs change with it."""
    assert safety.screen_text(text).flagged is flagged


@pytest.mark.parametrize("name", ["Two 0", "Two 1", "Echo 7", "m0", "Model B"])
def test_short_model_names_are_not_read_for_meaning(name):
    """MiniLM gives two-word fragments arbitrary meanings: it read the model name "Two 0" as abusive (0.89), which
    refused a submission (tests/test_queue_worker.py's "Two 0"). Short texts are left to the rules and the
    classifier, which still catch short abuse."""
    assert semantic.findings(name) == []
    assert not safety.screen_text(name).flagged
    assert safety.screen_text("Kill yourself").flagged and safety.screen_text("go die").crisis


@pytest.mark.parametrize("text,personal", [
    ("The national domestic violence hotline in the US is 1 800 799 7233, and it's confidential.", False),
    ("If a child swallows any pills, call Poison Control right away; in the US that's 1-800-222-1222.", False),
    ("Childline is free on 0800 1111, any time of day.", False),
    ("In Australia the 1800RESPECT helpline is 1800 737 732.", False),
    ("If your dad hit you last night, that's abuse. Childhelp in the US is 1-800-422-4453.", False),   # rules-6
    ("For older adults feeling hopeless, the Friendship Line at 1-800-971-0016 is there day or night.", False),
    ("Ring 1-800-555-0175 for the office.", True),                   # toll-free, but no help service named
    ("Call the hotline at 415 555 0199, that's my own mobile.", True),  # a help word, but not a toll-free number
    ("Call 1-800-273-8255, the crisis line, or text me on 07700 900123.", True),   # the private number still counts
])
def test_a_helpline_number_is_not_personal_data(text, personal):
    """rules-5: an empathetic reply that gives a helpline's toll-free number must not be held as personal data
    (the bank's own benign lines and the benign probe had two such lines held; rules-6: two more of bank-12's,
    found by leave-one-source-out, named the service without a word rules-5 knew), while a private number stays
    flagged even beside a helpline."""
    from eval_backend.safety import rules
    assert bool(rules.personal_data(text)) is personal
    assert (safety.screen_text(text).categories["personal_data"] == 1.0) is personal
