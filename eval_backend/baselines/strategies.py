"""Wording strategies of the offline contestants beside blind and cue (replies.py): reflective listening and
advice first. Pure, deterministic functions over the transcript, the context text and (for advice) the cue the
detector claimed; no sampling.

- reflective: hands the speaker's own words back in the second person ("So you went to the store..."), names
  how the situation may feel from the context's words, and asks an open question; never gives advice.
- advice first: one concrete suggestion for the topic first, then a short acknowledgement (of the claimed cue
  when there is one) and a check that the suggestion fits.
"""
from __future__ import annotations

import re

from .replies import _pick, context_mood, topic_of, words

# first person -> second person, for handing the speaker's words back
_SWAP = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "i'm": "you're",
         "i've": "you've", "i'll": "you'll", "i'd": "you'd", "am": "are", "we": "you", "us": "you", "our": "your",
         "ours": "yours", "we're": "you're", "we've": "you've", "was": "was", "you": "I", "your": "my"}
MAX_ECHO_WORDS = 14


def second_person(sentence: str) -> str:
    """'I bought bread for my mother' -> 'you bought bread for your mother' (lower-case, no final punctuation)."""
    out = []
    for i, token in enumerate(re.findall(r"[A-Za-z']+|\d+", sentence)):
        low = token.lower()
        out.append(_SWAP[low] if low in _SWAP else low if i == 0 else token)   # names keep their capital
    # 'you was' reads wrong after the swap
    return re.sub(r"\byou was\b", "you were", " ".join(out))


def first_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+", (text or "").strip())
    return parts[0] if parts else ""


REFLECT_MOOD = {-1: "With everything else going on, that must weigh on you.",
                1: "With such good news around it, that must feel good.",
                0: ""}
REFLECT_OPEN = ("What is that like for you?", "How are you feeling about it?", "What goes through your mind "
                "when you think about it?")


def reflective_reply(transcript: str, context: str | None) -> str:
    """'So you ...' (the speaker's first sentence, second person), the context's mood, an open question."""
    echo_words = second_person(first_sentence(transcript)).split()
    if not echo_words:
        echo = "I did not quite catch the words, but I am listening."
    else:
        clipped = echo_words[:MAX_ECHO_WORDS]
        echo = "So " + " ".join(clipped) + ("..." if len(echo_words) > MAX_ECHO_WORDS else ".")
    follow = _pick(REFLECT_OPEN, f"reflect|{(transcript or '').lower()}")
    return " ".join(x for x in (echo, REFLECT_MOOD[context_mood(context)], follow) if x)


ADVICE = {
    "work": "Try writing down the one next step and when you will do it.",
    "school": "A short plan for the next few days, an hour at a time, would make this easier.",
    "travel": "Check the times once more the day before, and leave a little early.",
    "food": "Keep it simple: pick one dish you know well and make plenty of it.",
    "family": "It may help to agree on a plan together before the day comes.",
    "health": "Put the appointment in your calendar now, with a reminder the day before.",
    "home": "Take it one room at a time, and start with the one you use most.",
    "weather": "Look at the forecast in the morning and keep a plan B ready.",
    "money": "Write down what it will cost and set that amount aside first.",
    "leisure": "Book it now, so it does not slip away.",
    "pets": "Keep their routine the same, and they will settle quickly.",
    "general": "Pick one small thing you can do about it today.",
}
ADVICE_HARD = "First, be kind to yourself; then pick one small thing you can do about it today."
ADVICE_CUE = {   # what advice-first says about a claimed cue, after its suggestion
    "whisper": "I'll keep my voice low.", "shout": "Let's take it calmly.", "raised": "Let's take it calmly.", "angry": "Let's take it calmly.",
    "fast": "And there's no rush.", "slow": "Take all the time you need.",
    "laughter": "Glad you're in good spirits!", "happy": "Glad you're in good spirits!",
    "sobbing": "And I'm sorry it's so hard right now.", "sad": "And I'm sorry it's so hard right now.",
}
ADVICE_CHECK = ("Would that work for you?", "Does that sound doable?", "Shall we start there?")


def advice_reply(transcript: str, context: str | None, cue: str | None) -> str:
    """A suggestion for the topic first (a gentler one for a hard situation), then the cue, then a check."""
    topic, _, _ = topic_of(f"{transcript} {context or ''}")
    mood = context_mood(context)
    advice = ADVICE_HARD if mood < 0 else ADVICE.get(topic, ADVICE["general"])
    said = words(transcript)
    ack = "Okay." if not said else _pick(("Okay, here's a thought.", "Right.", "Here's an idea."),
                                         " ".join(said))
    check = _pick(ADVICE_CHECK, f"advice|{topic}|{(transcript or '').lower()}")
    return " ".join(x for x in (ack, advice, ADVICE_CUE.get(cue or "", ""), check) if x)
