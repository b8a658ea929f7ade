"""Read the chosen option letter out of a free-text reply.

An answer we cannot read is a parse failure (letter None, with the reason) and is
counted as such by the caller; it is never replaced by a guess. Rules, first match
wins:
1. an explicit statement: "The answer is: B", "answer: b", "Answer - (C)",
   "Answer: option C", "the correct option is B", "I choose B" (the LAST such
   statement counts: models reason "...not A... The answer is: C");
2. the whole reply is a letter: "B", "B.", "(B)", "b)", "**B**", "[B]";
3. "Option B" / "choice (b)" when only one distinct letter is named that way;
4. the reply starts with a letter label: "B. Happy", "(B) happy", "B: happy", "B) ...";
5. the reply mentions exactly one option's text (whole words, case-insensitive),
   e.g. "Happy." for options [Sad, Happy, Angry]; two or more -> ambiguous.
Lower-case letters are accepted only where the context makes them a label (rules
1-4), never as a bare word inside a sentence ("a", "I" are words).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True)
class Parsed:
    letter: str | None       # the chosen letter (upper case), None when unreadable
    rule: str                # which rule matched, or why it failed

    @property
    def ok(self) -> bool:
        return self.letter is not None


# A label: optional brackets/bold/quotes around one letter.
_LABEL = r"""[\(\[\*"']*\s*([A-Ha-h])\s*([\)\]\*"']*)"""
_EXPLICIT = re.compile(
    r"(?:\b(?:answer|(?:option|choice)(?=\s+(?:is|would|should|will)\b))\s*(?:is|would\s+be|should\s+be|will\s+be)?\s*[:=\-]?\s*(?:option|choice)?\s*[:=\-]?"
    r"|\bi\s+(?:would\s+)?(?:choose|pick|select|go\s+with)\s*(?:option|choice)?)\s*" + _LABEL + r"(?![\w'])",
    re.IGNORECASE)
_BARE = re.compile(r"""^\s*[\(\[\*"']*\s*([A-Ha-h])\s*[\)\]\*"'.:]*\s*$""")
_OPTION_WORD = re.compile(r"\b(?:option|choice)\s*[\(\[]?\s*([A-Ha-h])(?![\w'])", re.IGNORECASE)
_LEADING = re.compile(r"^\s*[\(\[\*]*\s*([A-H])\s*(?:[\)\]\.:]|\*\*)")
_LEADING_LOWER = re.compile(r"^\s*[\(\[]\s*([a-h])\s*[\)\]]")


def _explicit(text: str) -> str | None:
    """The letter of the last explicit statement; a lower-case letter must look like a label."""
    found = None
    for m in _EXPLICIT.finditer(text):
        letter, closing = m.group(1), m.group(2)
        after = text[m.end():m.end() + 1]
        if letter.islower() and not closing and after not in ("", ".", ",", ";", ":", "\n", "!", ")"):
            continue  # "the answer is a bit tricky"
        found = letter
    return found


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def parse_choice(reply: str | None, letters: Sequence[str],
                 option_texts: Sequence[str] | Mapping[str, str] | None = None) -> Parsed:
    """The letter a reply chooses among `letters` (e.g. "ABCD"), or a parse failure.

    `option_texts` maps letters to option texts (a sequence is read in letter order)
    and enables rule 5.
    """
    valid = [c.upper() for c in letters]
    if not reply or not reply.strip():
        return Parsed(None, "empty reply")
    text = reply.strip()

    def pick(found: str, rule: str) -> Parsed:
        up = found.upper()
        if up in valid:
            return Parsed(up, rule)
        return Parsed(None, f"letter {up} is not an option ({''.join(valid)})")

    # 1. explicit statements; the last one counts
    found = _explicit(text)
    if found:
        return pick(found, "explicit")
    # 2. the reply is just a letter
    m = _BARE.match(text)
    if m:
        return pick(m.group(1), "bare letter")
    # 3. "Option B"
    named = {x.upper() for x in _OPTION_WORD.findall(text)}
    if len(named) == 1:
        return pick(named.pop(), "option word")
    if len(named) > 1:
        return Parsed(None, f"several options named ({''.join(sorted(named))})")
    # 4. a leading label
    m = _LEADING.match(text) or _LEADING_LOWER.match(text)
    if m:
        return pick(m.group(1), "leading label")
    # 5. option text
    if option_texts:
        pairs = option_texts.items() if isinstance(option_texts, Mapping) else zip(valid, option_texts)
        body = _words(text)
        hits = {letter.upper() for letter, opt in pairs if _words(opt).strip() and _words(opt) in body}
        if len(hits) == 1:
            return pick(hits.pop(), "option text")
        if len(hits) > 1:
            return Parsed(None, f"ambiguous: mentions options {''.join(sorted(hits))}")
    return Parsed(None, "no answer found")
