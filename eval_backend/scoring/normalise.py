"""The English text normaliser applied to both sides before WER.

What it does, in order (the same on reference and hypothesis):
1. Unicode NFKC; curly quotes and dashes become ASCII.
2. Lowercase.
3. A fixed list of English contractions is expanded (`CONTRACTIONS`: "n't" -> " not",
   "'re" -> " are", "'m" -> " am", "'ll" -> " will", "'ve" -> " have", and "'s" -> " is"
   only after it/that/he/she/there/here/what/where/who/how; "let's" -> "let us";
   "won't" -> "will not", "can't" -> "cannot"), so "it's" and "it is" score alike;
   a possessive "john's" is left alone (and becomes "johns" in step 5). "'d" is left
   alone (would/had is ambiguous).
4. Numbers written with digits become English words: "21" -> "twenty one",
   "3.5" -> "three point five", "1,000" -> "one thousand", "2nd" -> "second",
   "50%" -> "fifty percent". Integers up to 999,999,999,999; longer digit runs are
   spelled digit by digit. Hyphens are spaces, so "twenty-one" == "twenty one".
5. Punctuation is removed (jiwer's RemovePunctuation: every Unicode P* character;
   apostrophes left after step 3, as in "john's", disappear: "johns").
6. Whitespace is collapsed and stripped.
Nothing else: no spelling variants (colour/color), no filler-word removal, no
number words -> digits. Whisper's own English normaliser does more; ours is
smaller, documented here, and tested in tests/test_text_metrics.py.
"""
from __future__ import annotations

import re
import unicodedata

import jiwer

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORDINAL_SUFFIX = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
                   "nine": "ninth", "twelve": "twelfth"}
_ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                        "\u2013": "-", "\u2014": "-", "\u2212": "-"})


def _below_thousand(n: int) -> list[str]:
    words: list[str] = []
    if n >= 100:
        words += [_ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(_TENS[n // 10])
        n %= 10
        if n:
            words.append(_ONES[n])
    elif n or not words:
        words.append(_ONES[n])
    return words


def int_to_words(n: int) -> str:
    if n < 0:
        return "minus " + int_to_words(-n)
    if n >= 10**12:
        return " ".join(_ONES[int(d)] for d in str(n))
    words: list[str] = []
    for scale, name in _SCALES:
        if n >= scale:
            words += _below_thousand(n // scale) + [name]
            n %= scale
    if n or not words:
        words += _below_thousand(n)
    return " ".join(words)


def ordinal_words(n: int) -> str:
    words = int_to_words(n).split()
    last = words[-1]
    if last in _ORDINAL_SUFFIX:
        words[-1] = _ORDINAL_SUFFIX[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(st|nd|rd|th|%)?(?![\w])")


def _number_repl(m: re.Match) -> str:
    whole, frac, suffix = m.group(1), m.group(2), m.group(3)
    n = int(whole.replace(",", ""))
    if suffix in ("st", "nd", "rd", "th") and frac is None:
        return f" {ordinal_words(n)} "
    text = int_to_words(n) if len(whole.replace(",", "")) <= 12 else " ".join(_ONES[int(d)] for d in whole if d != ",")
    if frac is not None:
        text += " point " + " ".join(_ONES[int(d)] for d in frac)
    if suffix == "%":
        text += " percent"
    return f" {text} "


def numbers_to_words(text: str) -> str:
    return _NUMBER.sub(_number_repl, text)


CONTRACTIONS: tuple[tuple[str, str], ...] = (
    (r"\bwon't\b", "will not"), (r"\bcan't\b", "cannot"), (r"\blet's\b", "let us"),
    (r"n't\b", " not"), (r"'re\b", " are"), (r"'m\b", " am"), (r"'ll\b", " will"), (r"'ve\b", " have"),
    (r"\b(it|that|he|she|there|here|what|where|who|how)'s\b", r"\1 is"),
)
_CONTRACTIONS = [(re.compile(a), b) for a, b in CONTRACTIONS]


def expand_contractions(text: str) -> str:
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


_JIWER_PRE = jiwer.Compose([jiwer.ToLowerCase()])
_JIWER_POST = jiwer.Compose([jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip()])


def normalise_text(text: str | None) -> str:
    """The WER normaliser described in the module docstring. None -> ''."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_ASCII)
    text = expand_contractions(_JIWER_PRE(text))
    text = numbers_to_words(text)
    text = text.replace("-", " ").replace("/", " ")
    return _JIWER_POST(text)
