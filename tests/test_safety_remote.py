"""The remote screen against a loopback server speaking the OpenAI moderation protocol (issue 14): a good answer
maps onto our categories; every failure class gives "not_screened" and holds the item, never echoing the body."""
from __future__ import annotations

import os
import time

import pytest

from eval_backend import safety
from eval_backend.safety import rules
from tests.support.moderation_server import SECRET_IN_BODY, ModerationServer


@pytest.fixture
def server(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("EMPATHY_ARENA_MODERATION_", "EMPATHY_ARENA_SCREEN_")):
            monkeypatch.delenv(name)
    safety.clear_cache()
    with ModerationServer() as s:
        monkeypatch.setenv("EMPATHY_ARENA_MODERATION_URL", s.url + "/")
        monkeypatch.setenv("EMPATHY_ARENA_MODERATION_TIMEOUT_S", "1")
        yield s
    safety.clear_cache()


def test_good_answer_maps_the_protocol_categories_onto_ours(server, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_MODERATION_API_KEY_ENV", "TEST_MODERATION_KEY")
    monkeypatch.setenv("TEST_MODERATION_KEY", "sk-test-123")
    server.scores = {"harassment": 0.97, "hate/threatening": 0.2, "violence/graphic": 0.3, "sexual": 0.01}
    result = safety.screen_text("some reply")
    assert result.status == "screened" and result.flagged and not result.crisis
    assert result.categories["abuse"] == 0.97 and result.categories["hate"] == 0.2
    assert result.categories["violence"] == 0.3 and result.categories["sexual"] == 0.01
    assert result.reason == "harassment 0.97 (remote)"
    assert result.screen == f"remote:omni-moderation-latest@{server.url[7:]}+{rules.VERSION}"
    headers, body = server.requests[0]
    assert body == {"model": "omni-moderation-latest", "input": "some reply"}
    assert headers["authorization"] == "Bearer sk-test-123"


def test_clean_answer_and_our_rules_still_apply(server):
    result = safety.screen_text("I'm sorry for your loss.")
    assert not result.flagged and result.reason == "" and result.status == "screened"
    phone = safety.screen_text("Call me on 07700 900123.")       # the protocol has no personal-data category
    assert phone.flagged and "phone number 1.00 (rule)" in phone.reason


def test_self_harm_intent_is_a_crisis_reading(server):
    server.scores = {"self-harm/intent": 0.8, "self-harm": 0.4}
    result = safety.screen_text("a message")
    assert result.crisis and result.categories["self_harm"] == 0.4 and not result.flagged


def test_the_model_and_cache(server, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_MODERATION_MODEL", "self-hosted-mod")
    safety.screen_text("same text")
    safety.screen_text("same text")
    assert len(server.requests) == 1 and server.requests[0][1]["model"] == "self-hosted-mod"


@pytest.mark.parametrize("mode,failure", [
    ("5xx", "http_5xx"), ("429", "rate_limited"), ("redirect", "redirect"), ("not_json", "malformed_body"),
    ("no_results", "malformed_body"), ("bad_scores", "malformed_body"), ("huge", "too_large"),
    ("huge_chunked", "too_large"), ("slow", "timeout")])
def test_failures_hold_the_item_as_not_screened_without_echoing_the_body(server, mode, failure):
    server.mode = mode
    started = time.monotonic()
    result = safety.screen_text("a reply to screen")
    assert result.status == "not_screened" and result.flagged
    assert result.reason == f"not screened: {failure}"
    assert SECRET_IN_BODY not in repr(result)
    assert time.monotonic() - started < 2.5            # the timeout (1 s) bounds the wait
    server.mode = "ok"                                 # failures are not cached: the next call screens
    assert safety.screen_text("a reply to screen").status == "screened"


def test_unreachable_server_and_optional_screening(server, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_MODERATION_URL", "http://127.0.0.1:1")
    result = safety.screen_text("anything")
    assert result.status == "not_screened" and result.flagged and result.reason == "not screened: connection"
    monkeypatch.setenv("EMPATHY_ARENA_SCREEN_REQUIRED", "0")
    optional = safety.screen_text("anything")
    assert optional.status == "not_screened" and not optional.flagged
