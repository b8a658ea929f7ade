"""Prompt rendering and injection safety: every piece of variable text sits between `<<NAME-nonce>>` /
`<<END-NAME-nonce>>` markers with a fresh random nonce, and any `<<` / `>>` inside it is broken up, so a reply
can neither guess nor type a closing marker. Text that addresses the judge is flagged, not hidden."""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from ..judge_prompts import JudgePrompt

_MARKER_BREAK = re.compile(r"<{2,}|>{2,}")
_ADDRESSING = [
    ("ignore_instructions", re.compile(
        r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+|of\s+)*(previous|prior|above|earlier|"
        r"preceding|system|judging|grading|evaluation)\s+(instructions?|prompts?|rules|guidelines|messages?)", re.I)),
    ("addresses_judge", re.compile(
        r"\b(as|dear|attention|note to|hey)\s+(the\s+|an?\s+)?(ai\s+)?(judge|evaluator|grader|rater|assessor|reviewer)\b",
        re.I)),
    ("requests_score", re.compile(
        r"\b(give|assign|award)\b.{0,30}\b(score|rating|grade|marks?|[1-6]\s*/\s*[56]|5|6)\b"
        r"|\brate\s+(this|the|my)\s+(reply|response|answer)\b", re.I | re.S)),
    ("role_marker", re.compile(r"(^|\n)\s*(system|assistant|developer)\s*:|<\|?(system|im_start)\|?>|\[/?inst\]", re.I)),
    ("fake_marker", re.compile(r"<<\s*/?\s*(end-)?[a-z_]*-?[0-9a-f]*\s*>>", re.I)),
]


def injection_flags(text: str) -> list[str]:
    """Names of the ways a piece of judged text tries to talk to the judge (empty = none)."""
    if not text:
        return []
    flags = [name for name, rx in _ADDRESSING if rx.search(text)]
    # "score" alone is common in ordinary replies (a football score): require a judge-ish context for it
    if flags == ["requests_score"] and not re.search(r"\b(judge|evaluat|grader|rating|rate this)\w*", text, re.I):
        flags = []
    return flags


def neutralise(text: str) -> str:
    """Turn every run of 2+ `<` / `>` into visible look-alikes (‹‹ ››), so untrusted text cannot produce
    a marker whatever the nonce, and the judge sees that it was escaped."""
    return _MARKER_BREAK.sub(lambda m: ("\u2039" if m.group(0)[0] == "<" else "\u203a") * len(m.group(0)), text)


def wrap(name: str, text: str, nonce: str) -> str:
    tag = name.upper()
    return f"<<{tag}-{nonce}>>\n{neutralise(text)}\n<<END-{tag}-{nonce}>>"


def new_nonce() -> str:
    return secrets.token_hex(8)


@dataclass
class Rendered:
    system: str
    user: str
    nonce: str


Block = str | list  # one text, or a list of (name, text) pairs rendered as successive wrapped blocks


def _wrap_block(key: str, value: Block, nonce: str) -> str:
    if isinstance(value, str):
        return wrap(key, value, nonce)
    return "\n".join(wrap(name, text, nonce) for name, text in value)


def judged_texts(blocks: dict[str, Block]) -> list[str]:
    """The replies inside a prompt's blocks (keys / names `reply`, `reply_*`): what injection flags look at."""
    out = []
    for key, value in blocks.items():
        if isinstance(value, str):
            if key == "reply" or key.startswith("reply_"):
                out.append(value)
        else:
            out += [text for name, text in value if name.lower().startswith("reply")]
    return out


def render(prompt: JudgePrompt, blocks: dict[str, Block], plain: dict[str, str] | None = None,
           nonce: str | None = None) -> Rendered:
    """Fill a prompt: `blocks` are untrusted text (wrapped), `plain` short labels (still neutralised)."""
    nonce = nonce or new_nonce()
    values = {k: _wrap_block(k, v, nonce) for k, v in blocks.items()}
    values.update({k: neutralise(str(v)).replace("\n", " ") for k, v in (plain or {}).items()})
    user = prompt.template.format(spec=prompt.output_spec(), **values)
    return Rendered(prompt.system.format(nonce=nonce), user, nonce)


def context_text(request) -> str:
    """The situation given beside the user's clip, as a prompt shows it ("(none)" when the task gives none)."""
    return request.context if request.context is not None else "(none)"
