"""Our own small screening rules, for what a profanity classifier cannot see.

Written for this project (not taken from any list), English only, matching words rather than meaning
(docs/security.md, "Safety screening", says what they miss):
- personal data: phone-shaped digit runs (7+ digits; not a toll-free number named as a help service) and e-mail
  addresses;
- crisis: first-person distress phrasings ("I want to die", "better off without me", "suicidal thoughts") and
  indirect signs (crisis_signs.py: farewells, notes, means, arrangements for after); scored 0.6 — a crisis reading
  (help notice) below the flagging threshold, so a person in distress is not held;
- self-harm encouragement ("kill yourself"): 1.0, flagged as self_harm and abuse;
- threats of violence ("I'll break your neck", "I know where you live"): 1.0 violence;
- hate: a named group of people joined to a dehumanising word or a call to remove them: 0.95 hate;
- insults addressed to "you" that the classifier scores low ("waste of space", "nobody likes you"): 0.9 abuse;
- contempt without an insult word and veiled threats (directed.py): 0.9 abuse / violence.
Rules were written while looking at tests/support/safety_sentences.py's DEV set (so DEV figures are optimistic).
"""
from __future__ import annotations

import re

from . import crisis_signs, directed
from .core import Finding

VERSION = "rules-6"

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Seven or more digits, optionally led by + and split by spaces, dots, dashes or brackets: phone-shaped.
# A sentence's full stop may follow; a decimal point may not (so "3.14159265" is a number, not a phone).
PHONE = re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,5}\)[\s.-]?)?\d(?:[\s.-]?\d){6,13}(?!\w|\.\d)")
NOT_PHONE = re.compile(r"\d+\.\d+|\d{1,2}([./-])\d{1,2}\1\d{2,4}|\d{4}([./-])\d{1,2}\2\d{1,2}")      # a decimal number; a date
# A toll-free or freephone number (North America's 8xx, the UK's 0800/0808, Australia's and Ireland's 1800) named as a
# help service nearby is a helpline, not someone's personal data: an empathetic reply that gives the domestic-violence
# hotline's number must not be held. Both are needed — a private number called a "hotline" and a toll-free number
# with no help service named ("ring 1-800-555-0175 for the office") are still flagged.
TOLL_FREE = re.compile(r"^(?:\+?1[\s.-]?)?\(?8(?:00|33|44|55|66|77|88)\)?[\s.-]?\d{3}[\s.-]?\d{4}$|"
                       r"^(?:\+44[\s.-]?|0)80[08](?:[\s.-]?\d){4,7}$|^(?:\+61[\s.-]?|\+353[\s.-]?)?1[\s.-]?800(?:[\s.-]?\d){6}$")
HELP_SERVICE = re.compile(r"help|hot\s*line|life\s*line|\bline\b|\b(?:crisis|poison|samaritans|childline|support|"
                          r"counsel|abuse|suicide|domestic\s+violence|free(?:phone)?|toll[\s-]free|confidential|"
                          r"anonymous|24/7|day\s+or\s+night|call\s+or\s+text|talk\s+to)", re.I)
HELP_NEAR = 80             # characters before or after a number in which a help service must be named


def _any(*patterns: str) -> list[re.Pattern]:
    return [re.compile(p, re.I) for p in patterns]


_I = r"\bi(?:'m|\s+am|'ve|\s+have|'ll|\s+will|\s+just|\s+really|\s+keep|\s+feel\s+like)?"
CRISIS = _any(
    _I + r"\s+(?:want|wanna|need|going|plan(?:ning)?|thinking\s+about|thought\s+about|been\s+thinking\s+about)\s+"
    r"(?:to\s+)?(?:die|dying|kill(?:ing)?\s+myself|end(?:ing)?\s+(?:it\s+all|my\s+life|it)|overdos(?:e|ing))\b",
    r"\b(?:kill(?:ing)?|hurt(?:ing)?|harm(?:ing)?|cut(?:ting)?)\s+myself\b",
    r"\bi\s+(?:don't|do\s+not)\s+want\s+to\s+(?:live|be\s+alive|be\s+here|wake\s+up)\b",
    r"\bi\s+wish\s+i\s+(?:was|were)\s+dead\b",
    r"\b(?:better\s+off|happier)\s+(?:without\s+me|if\s+i\s+(?:was|were)\s+(?:dead|gone))\b",
    r"\b(?:nobody|no\s+one)\s+would\s+(?:care|notice|miss\s+me)\s+if\s+i\s+(?:died|was\s+gone|disappeared)\b",
    r"\bsuicid(?:e\s+note|al\s+(?:thoughts|feelings)|e\s+plan)\b",
    r"\b(?:life\s+is(?:n't|\s+not)\s+worth\s+living|done\s+with\s+life)\b",
    r"\bi\s+(?:can't|cannot)\s+(?:go\s+on|take\s+it\s+anymore)\b",
    r"\bdisappear\s+forever\b",
)
ENCOURAGE_SELF_HARM = _any(
    r"\b(?:go\s+)?kill\s+yourself\b",
    r"\byou\s+should\s+(?:just\s+)?(?:die|end\s+it|end\s+your\s+life|hurt\s+yourself)\b",
    r"\bgo\s+(?:and\s+)?die\b",
)
_HARM_VERB = r"(?:kill|murder|stab|shoot|beat|hurt|strangle|choke|break|smash|slit|burn|bury|punch|torture)"
THREATS = _any(
    r"\bi(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|'m\s+gonna|\s+want\s+to)\s+(?:\w+\s+)??"
    + _HARM_VERB + r"\w*\s+(?:you|your|him|his|her|them|their)\b",
    r"\bi(?:'ll|\s+will)\s+make\s+you\s+(?:bleed|pay|suffer)\b",
    r"\b(?:watch\s+your\s+back|i\s+know\s+where\s+you\s+live|(?:i'm|i\s+am)\s+coming\s+(?:after|for)\s+you)\b",
    r"\b(?:put|putting)\s+a\s+bullet\s+in\b",
    r"\b(?:someone|somebody)\s+should\s+(?:kill|shoot|stab|beat|hurt)\b",
    r"\byou\s+deserve\s+to\s+(?:be\s+)?(?:die|shot|killed|beaten|stabbed|hurt)\b",
)
_GROUPS = (r"(?:immigrants?|migrants?|foreigners?|refugees?|asylum\s+seekers?|muslims?|jews?|christians?|hindus?|"
           r"women|girls|gays?|gay\s+(?:people|men)|lesbians?|trans\s+(?:people|women|men)|"
           r"(?:black|white|brown|disabled|old|fat|poor|deaf|blind)\s+people|blacks|asians?|africans?|arabs?|"
           r"mexicans?|chinese|indians?|gypsies|roma|jewish\s+people)")
_DEHUMANISING = (r"(?:vermin|parasites?|animals?|savages?|subhuman|filth|filthy|disease|plague|cockroaches|rats|"
                 r"perverts?|freaks?|abominations?|criminals?|rapists?|terrorists?|invaders?|scum|trash|garbage|"
                 r"inferior|worthless|stupid|liars?|thieves|burden|mentally\s+ill)")
HATE = _any(
    r"\b(?:all\s+|those\s+|these\s+)?" + _GROUPS + r"\s+(?:are|is)\s+(?:\w+\s+){0,4}?" + _DEHUMANISING + r"\b",
    r"\b" + _GROUPS + r"\s+(?:should|must|need\s+to)\s+(?:all\s+)?(?:be\s+)?(?:put\s+down|wiped\s+out|"
    r"exterminated|killed|gassed|deported|thrown\s+out|go\s+back|be\s+stopped|die)\b",
)
INSULTS = _any(
    r"\byou(?:'re|\s+are)?\s+(?:such\s+)?(?:a|an)?\s*(?:(?!feel|felt|like|not|think|thought|call|called|say|said)"
    r"[\w-]+,?\s+){0,3}?(?:idiot|moron|loser|creep|freak|jerk|"
    r"fool|scum|slob|twit|cretin|imbecile|waste\s+of\s+space|piece\s+of\s+(?:garbage|trash|crap|work))\b",
    r"\b(?:nobody|no\s+one)\s+(?:likes|loves|wants|will\s+ever\s+(?:love|miss|want))\s+you\b",
)


def personal_data(text: str) -> list[Finding]:
    out = []
    if EMAIL.search(text):
        out.append(Finding("personal_data", 1.0, "rule", "e-mail address"))
    if any(sum(ch.isdigit() for ch in m.group()) >= 7 and not NOT_PHONE.fullmatch(m.group())
           and not _helpline(text, m) for m in PHONE.finditer(text)):
        out.append(Finding("personal_data", 1.0, "rule", "phone number"))
    return out


def _helpline(text: str, number: re.Match) -> bool:
    """A toll-free number with a help service named within HELP_NEAR characters of it."""
    near = text[max(0, number.start() - HELP_NEAR):number.end() + HELP_NEAR]
    return bool(TOLL_FREE.match(number.group().strip())) and bool(HELP_SERVICE.search(near))


def _hit(patterns: list[re.Pattern], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def _said(patterns: list[re.Pattern], text: str, held_back) -> bool:
    """A match that is the text's own words: not retold or quoted (nor, for threats, about a game) —
    "she told you 'nobody will ever love you'" and "I'll bury you at Scrabble" are not held (rules-3)."""
    return any(not held_back(text, m) for p in patterns for m in p.finditer(text))


def findings(text: str) -> list[Finding]:
    """Every rule's findings for one text."""
    text = text.replace("\u2019", "'")
    out = personal_data(text)
    if _hit(CRISIS, text):
        out.append(Finding("self_harm", 0.6, "rule", "crisis phrasing"))
    elif crisis_signs.crisis_sign(text):
        out.append(Finding("self_harm", 0.6, "rule", "crisis sign"))
    if _said(ENCOURAGE_SELF_HARM, text, directed.insult_held_back):
        out += [Finding("self_harm", 1.0, "rule", "self-harm encouragement"), Finding("abuse", 1.0, "rule", "abuse")]
    if _said(THREATS, text, directed.threat_held_back):
        out.append(Finding("violence", 1.0, "rule", "threat"))
    if _hit(HATE, text):
        out.append(Finding("hate", 0.95, "rule", "dehumanising a group"))
    if _said(INSULTS, text, directed.insult_held_back):
        out.append(Finding("abuse", 0.9, "rule", "insult"))
    return out + directed.findings(text)
