"""safejson.nesting_depth: brackets inside strings (escapes, an unterminated string) do not count; fast on a reply
that carries base64 audio (issue 22: the runner checks every reply before parsing it)."""
from __future__ import annotations

import base64
import json
import random

import pytest

from eval_backend import safejson


def reference_depth(text: str) -> int:
    """One step per character: the definition, written plainly."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


@pytest.mark.parametrize("text,depth", [("", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('["[[[", "\\"[["]', 1),
                                        ('"unterminated [[[', 0), ("]]][", 0), ("[]][[", 1), ("[" * 10_000, 10_000),
                                        ('{"k\\\\": [[]]}', 3)])
def test_depth_of_known_documents(text, depth):
    assert safejson.nesting_depth(text) == depth == reference_depth(text)
    assert safejson.nesting_depth(text.encode()) == depth


def test_agrees_with_the_plain_definition_on_random_text():
    rng = random.Random(0)
    for _ in range(5000):
        text = "".join(rng.choice('[]{}"\\ab,:\n') for _ in range(rng.randint(0, 40)))
        assert safejson.nesting_depth(text) == reference_depth(text), repr(text)


def test_a_reply_with_audio_is_checked_and_a_deep_one_refused():
    audio = base64.b64encode(bytes(range(256)) * 2000).decode()
    doc = json.dumps({"choices": [{"message": {"content": "[hi]", "audio": {"data": audio}}}]})
    assert safejson.loads(doc)["choices"][0]["message"]["audio"]["data"] == audio
    with pytest.raises(safejson.JSONLimitError, match="nests 65 levels"):
        safejson.loads("[" * 65 + "]" * 65)
