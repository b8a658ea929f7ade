"""Rules for harm aimed at the listener in words no list of insults or threats holds (issue 26, rules-3).

The profanity classifier scores swearing, the older rules (rules.py) named insults and explicit threats, and the
semantic layer (semantic.py) what is close to its example bank; all three missed contempt without an insult word
("you are so pathetic", "nobody could stand being around you") and veiled threats ("shame if something happened to
your kids", "sleep with one eye open"). These rules match the constructions those take — "you are" + a word of
contempt, "nobody" + a verb of rejection + "you", a first person + a harm verb + "you", a weapon + "your", the
stock phrases of intimidation — and hold back when the words are someone else's, retold or quoted ("she told you
nobody would ever love you", "people who call you useless"), denied ("you are not a failure") or a feeling the
reply names ("you're feeling useless"), because empathetic replies say all of those.

It also gives the profanity classifier the text's own words (own_words): without quotations, what follows a word
of retelling, and what a negation denies, since the classifier scores words and held "your boss calling you an
idiot is bullying" and "you're not stupid" as the insults they report or deny.

Written for this project, English only: rules-3 while looking at what the screen missed on the spent sets
(tests/support/safety_sentences.py and the held-apart sets v1-v3); rules-4 also on a development set written apart
on 2026-12-03 (kept outside the repository: it was tuned on) and with the classifier's own-words input. Figures on
those sets are optimistic for them; held-apart v5 was read once for rules-3, v6 once for rules-3 and once for
rules-4 (docs/security.md). Every pattern is bounded (no unbounded repetition
next to another), so a long hostile text costs milliseconds (tests/test_safety_directed.py).
"""
from __future__ import annotations

import re

from .core import Finding


def _any(*patterns: str) -> list[re.Pattern]:
    return [re.compile(p, re.I) for p in patterns]


_YOU_ARE = r"\b(?:you(?:'re|\s+are|\s+r|re)|ur|u\s+r|u\s+are)\s+"
_DEGREE = r"(?:(?:so|such|really|truly|genuinely|absolutely|completely|totally|utterly|just|honestly|clearly|still|always|that|too|pretty|the\s+most|the\s+biggest)\s+){0,3}"
_CONTEMPT_ADJ = (r"(?:pathetic|worthless|useless|stupid|dumb|thick|dim|dense|brainless|brain-dead|clueless|hopeless|"
                 r"spineless|gutless|unbearable|insufferable|unlovable|boring|annoying|irritating|disgusting|revolting|"
                 r"repulsive|vile|nasty|bitter|ugly|hideous|lazy|selfish|needy|clingy|pitiful|incompetent|ignorant|"
                 r"delusional|deluded|embarrassing|spoiled|spoilt|gross|dull|tiresome|exhausting\s+to\s+be\s+around|"
                 r"attention-seeking|attention\s+seeking|unemployable|fat|forgettable|talentless|mediocre|friendless|dumber|uglier|lazier|dimmer)")
_CONTEMPT_NOUN = (r"(?:failure|disappointment|disgrace|embarrassment|joke|laughing\s*stock|burden\s+on\s+everyone|"
                  r"waste(?:\s+of\s+\w+)?|numpty|prat|clown|muppet|dimwit|halfwit|nitwit|dunce|dork|weirdo|"
                  r"parasite|leech|pig|cow|hag|witch|crybaby|cry-baby|snowflake|whinger|attention\s+seeker|"
                  r"liability|dead\s+weight|lost\s+cause|drama\s+queen|nobody|nothing|bore|pest|nuisance|fraud|"
                  r"coward|wimp|baby|child|toddler|charity\s+case|sad\s+case|basket\s+case|nut\s*case|lunatic|"
                  r"psycho|headcase|head\s+case|nonentity|doormat|simpleton|buffoon|oaf|dolt|"
                  r"wet\s+blanket|sponger|freeloader|slacker|deadbeat|quitter)")
_PERSON_SUFFIX = r"(?:\s+(?:person|human(?:\s+being)?|man|woman|girl|boy|guy|mother|father|parent|friend|partner|wife|husband|son|daughter|colleague|employee))?"
# Up to two describing words before the contempt word ("a miserable old hag"), never a verb or a preposition (so
# "you're feeling useless" and "you're holding a mug" are not insults).
_FILLER = (r"(?:(?!(?:the|at|in|on|with|to|of|for|from|by|like|about|not|never|no|feel|felt|think|seem|seems|sound|sounds|"
           r"look|looks|being|been|called|told|treated|made)\b)[a-z-]+(?<!ing)(?<!ed),?\s+(?:and\s+)?){0,2}?")
CONTEMPT = _any(
    # "you're so pathetic", "you are a complete waste of space", "ur such a joke"
    _YOU_ARE + _DEGREE + r"(?:an?\s+)?" + _DEGREE + _FILLER + r""
    r"(?:" + _CONTEMPT_ADJ + _PERSON_SUFFIX + r"|" + _CONTEMPT_NOUN + r")\b(?!'|\s+(?:like|about|for|at|with|as\s+thieves|romantic|optimist|to\s+(?:feel|think)))",
    # "someone as dim as you", "a person as boring as you"
    r"\b(?:someone|somebody|anyone|anybody|a\s+person|people|a\s+man|a\s+woman)\s+(?:as|so)\s+" + _CONTEMPT_ADJ + r"\s+as\s+(?:you|u)\b",
    # "what a prat", "what a pathetic little man"
    r"\bwhat\s+an?\s+(?:[\w-]+\s+){0,2}?(?:" + _CONTEMPT_NOUN + r"|loser|idiot|moron|cretin|creep|freak|jerk|fool|slob|twit)\b",
    # "nobody could stand you", "no one respects you", "everyone laughs at you"
    r"\b(?:nobody|no\s*one|not\s+one\s+person)\s+(?:\w+\s+){0,4}?(?:can|could|will|would|ever|really|actually|even)?\s*"
    r"(?:stand|stands|respect(?:s|ed)?|value[sd]?|like[sd]?|love[sd]?|want(?:s|ed)?|cared?\s+about|cares\s+about|miss(?:es|ed)?|will\s+miss|would\s+miss|asked|"
    r"invited|tolerates?|puts?\s+up\s+with|listens?\s+to|takes?\s+you\s+seriously|trusts?|wants?\s+to\s+hear)\s+"
    r"(?:(?:being\s+)?(?:around|with|near)\s+)?(?:you|u|your|ya)\b",
    r"\b(?:nobody|no\s*one)\s+asked\b",
    # "people like you deserve ...", "people like you make me sick"
    r"\b(?:people|someone|somebody|men|women|scum|losers)\s+like\s+(?:you|u)\s+(?:\w+\s+)?(?:deserve|should\s+(?:never|not|be)|"
    r"make\s+me\s+sick|are\s+(?:why|the\s+reason|a\s+waste|the\s+problem)|ruin|disgust)",
    r"\b(?:everyone|everybody|people|they\s+all|the\s+whole\s+\w+)\s+(?:\w+\s+){0,3}?(?:hates?|laughs?\s+at|avoids?|"
    r"mocks?|pit(?:y|ies)|despises?|can't\s+stand|cannot\s+stand|is\s+sick\s+of|are\s+sick\s+of|is\s+tired\s+of|"
    r"are\s+tired\s+of|just\s+tolerates?|only\s+tolerates?|tolerates?|talks?\s+about\s+you\s+behind|calls?\s+you)\s+(?:you|u|your)\b",
    # imperatives of contempt
    r"(?:^|[.!?,;]\s*)(?:just\s+|oh\s+)?(?:get\s+over\s+yourself|grow\s+up|man\s+up|toughen\s+up|cry\s+me\s+a\s+river|boo\s+hoo|"
    r"stop\s+(?:whining|whingeing|whinging|moaning|snivelling|sniveling|being\s+(?:such\s+)?(?:a\s+)?(?:baby|wimp|drama\s+queen|crybaby|child)))\b",
    # "you deserve to be alone", "you brought this on yourself"
    r"\b(?:you|u)\s+(?:\w+\s+)?deserve\s+(?:to\s+(?:be\s+)?(?:alone|suffer|miserable|unhappy|lonely|rot|abandoned|left|"
    r"dumped|fired|sacked|hated|laughed\s+at)|every\s+bit\s+of\s+(?:it|this)|what(?:ever)?\s+(?:you\s+get|happens|you\s+got))\b",
    r"\b(?:you|u)\s+(?:brought\s+(?:this|it)\s+on\s+yourself|had\s+it\s+coming|asked\s+for\s+it)\b",
    # "your kids must be ashamed of you", "no wonder your partner left you"
    r"\b(?:your|ur)\s+(?:\w+\s+){0,2}?(?:must|should|will|would|probably)\s+(?:\w+\s+)?(?:be\s+)?(?:so\s+)?"
    r"(?:ashamed|embarrassed|disgusted|sick\s+of\s+you|relieved\s+to\s+be\s+rid|glad\s+to\s+be\s+rid|glad\s+you(?:'re|\s+are)\s+gone)\b",
    r"\bno\s+wonder\s+(?:your\s+\w+|he|she|they|everyone|everybody|nobody|no\s+one|people)\s+(?:\w+\s+)?"
    r"(?:left|leaves|dumped|cheated|hates?|can't\s+stand|avoids?|fired|sacked|ran\s+off|walked\s+out)\b",
    r"\bno\s+wonder\s+(?:you(?:'re|\s+are)|ur)\s+(?:still\s+|so\s+|always\s+)?(?:alone|single|friendless|unemployed|unemployable|a\s+failure|unloved)\b",
    # superlatives about the listener
    r"\b(?:you(?:'re|\s+are)|ur)\s+(?:\w+\s+)?(?:the|easily\s+the)\s+(?:worst|most\s+" + _CONTEMPT_ADJ + r"|biggest\s+" + _CONTEMPT_NOUN +
    r"|least\s+(?:likeable|likable|interesting|useful|competent))\b",
    r"\b(?:the\s+)?(?:most|least)\s+(?:useless|pathetic|boring|annoying|incompetent|selfish|disappointing|likeable|"
    r"likable|competent|useful)\s+(?:member|person|people|employee|parent|friend|human)\b[^.!?]{0,40}\b(?:you|u)\b",
    # dismissing grief or pain: "get over it", "move on", "fishing for sympathy", "your so-called grief"
    r"(?:^|[.!?,;]\s*)(?:just\s+|oh\s+)?(?:get\s+over\s+it|move\s+on|suck\s+it\s+up|get\s+a\s+grip|get\s+a\s+life|"
    r"stop\s+(?:crying|complaining|feeling\s+sorry\s+for\s+yourself))\s*[.!,]",
    r"\b(?:fishing\s+for\s+(?:sympathy|attention|compliments)|playing\s+the\s+victim|milking\s+(?:it|this|your)|"
    r"attention[-\s]seeking|couldn't\s+be\s+me|nobody\s+cares\s*[.!,?]|no\s+one\s+cares\s*[.!,?])",
    r"\b(?:crying|whining|moaning|whinging|sulking)\s+(?:about|over)\s+(?:[\w']+\s+){1,5}?again\s*\?",
    r"\b(?:your|ur)\s+(?:so-called|so\s+called|supposed|[\"\u201c]\w+[.,!?]?[\"\u201d])\s*(?:grief|illness|depression|anxiety|"
    r"disability|condition|trauma|pain|career|job|friends|talent)?",
    r"\b(?:your|ur)\s+little\s+(?:\w+\s+)?(?:job|career|problems?|feelings|breakdown|tantrum|drama|sob\s+story|diagnosis|"
    r"condition|episode)\b",
    # "you deserve every bad thing", "the only thing you're good at", "why would anyone miss you"
    r"\bdeserve\s+(?:every|all\s+the|all)\s+(?:bad|awful|terrible|horrible|rotten|nasty)\s+things?\b",
    r"\b(?:only\s+thing|all)\s+(?:you(?:'re|\s+are|'ve\s+ever\s+been|\s+were|\s+have\s+ever\s+been)|ur)\s+(?:ever\s+)?good\s+(?:at|for)\b",
    r"\bwhy\s+would\s+(?:anyone|anybody|someone|they|he|she)\s+(?:ever\s+)?(?:miss|love|want|like|care\s+about|hire|date|"
    r"marry|listen\s+to)\s+(?:you|u)\b",
    # "being you must be its own punishment", "must be exhausting being that forgettable"
    r"\bbeing\s+you\s+must\s+be\b|\bmust\s+be\s+(?:\w+\s+)?(?:hard|exhausting|tiring|awful|tough|lonely)\s+being\s+"
    r"(?:so\s+|that\s+|this\s+|such\s+a\s+|this\s+much\s+of\s+a\s+)?(?:you\b|" + _CONTEMPT_ADJ + r"|" + _CONTEMPT_NOUN +
    r"|forgettable|unlikeable|mediocre|irrelevant|talentless|pointless)",
    # "you're the reason your family doesn't visit", "he left because of you", "the problem is just you"
    r"\b(?:you(?:'re|\s+are)|ur)\s+(?:\w+\s+)?the\s+(?:reason|problem)\s+(?:why\s+)?(?:your|ur|everyone|nobody|no\s+one|people|they|he|she)\b"
    r"[^.!?]{0,30}\b(?:doesn't|don't|left|leave|leaves|hates?|miserable|visit|avoid|can't\s+stand|unhappy)",
    r"\b(?:left|leaves|walked\s+out|moved\s+away|stopped\s+calling|stopped\s+visiting|cheated|gave\s+up)\s+because\s+of\s+(?:you|u)\b",
    r"\bthe\s+problem\s+(?:is|was|has\s+always\s+been)\s+(?:just\s+|really\s+|always\s+|simply\s+)?(?:you|u)\b(?!\s+(?:feel|think|are\s+not))",
    # comparisons: "I've met houseplants with more personality", "worth less than the paper, just like you"
    r"\b(?:met|seen|known)\s+(?:\w+\s+){0,2}?(?:with|that\s+have|that\s+had)\s+more\s+(?:personality|charm|brains|talent|sense|"
    r"spine|backbone|wit|life)\b|\bmore\s+(?:personality|charm|brains|talent|spine|backbone)\s+than\s+(?:you|u)\b",
    r"\b(?:worthless|worth\s+less|useless|pointless|wasted)\b[^.!?]{0,50}\bjust\s+like\s+(?:you|u)\b",
    r"\b(?:amazed|surprised|shocked|impressed)\s+(?:that\s+)?(?:you|u)\s+(?:can|even|manage|managed|remember|know\s+how)\s+"
    r"(?:to\s+)?(?:tie|breathe|dress|read|spell|walk\s+and|feed\s+yourself|function|count)",
    r"\bis\s+that\s+(?:your|ur)\s+(?:face|voice|hair|outfit|laugh)\s+or\b|\b(?:could|would)\s+clear\s+a\s+room\b|"
    r"\bpeaked\s+in\s+(?:primary|secondary|high|middle|junior)\s+school\b",
    r"\b(?:you(?:'re|\s+are)|ur)\s+a\s+walking\s+(?:warning|disaster|advert|cliche|clich\u00e9|joke|red\s+flag|embarrassment|"
    r"cautionary\s+tale)",
    r"\b(?:sort|kind|type)\s+of\s+(?:person|people|man|woman|guy|girl|parent)\s+(?:who|that)\s+(?:gets?\s+forgotten|nobody|no\s+one|"
    r"people\s+(?:avoid|cross|forget|pity|laugh\s+at)|everyone\s+(?:avoids|forgets|hates))",
    r"\beven\s+(?:your|ur)\s+(?:own\s+)?\w+\s+(?:\w+\s+)?(?:dreads?|hates?|can't\s+stand|avoids?|pit(?:y|ies)|despises?|"
    r"gave\s+up\s+on|is\s+embarrassed|are\s+embarrassed)\b",
    r"\bif\s+(?:you|u)\s+(?:weren't|wasn't|were\s+not)\s+so\s+" + _CONTEMPT_ADJ,
    r"\btherapy\b[^.!?]{0,40}\b(?:growing\s+up\s+with|being\s+around|living\s+with|knowing|dealing\s+with|being\s+raised\s+by)\s+(?:you|u)\b"
    r"|\b(?:therapists?|counsellors?)\s+about\s+(?:you|u)\b",
    r"\b(?:miscarriage|death|dying|passing|baby\s+dying)\s+(?:was|is)\s+(?:probably\s+|honestly\s+|really\s+|actually\s+)?"
    r"(?:for\s+the\s+best|a\s+blessing|a\s+mercy|the\s+best\s+thing)",
    r"\b(?:you(?:'ve\s+got|\s+have|'ve))\s+nothing\s+to\s+offer\b",
    r"\b(?:her|his|their|your\s+\w+'s)\s+little\s+(?:disappointment|failure|disgrace|embarrassment)\b|\byou\s+had\s+one\s+job\b",
    r"\b(?:grief|depression|anxiety|trauma|illness|cancer|sadness)\s+(?:isn't|is\s+not)\s+a\s+personality\b|"
    r"\b(?:an\s+excuse\s+for\s+everything|always\s+an\s+excuse\s+with\s+you)\b",
    r"\b(?:always|such|what|typical)\s+(?:the\s+|a\s+)?drama\s+queen\b|\b(?:hear\s+from|talk\s+to|listen\s+to)\s+a\s+(?:failure|loser|nobody)\b",
    r"\b(?:cancer|illness|diagnosis|disability|divorce|grief|tragedy|sob\s+story)(?:'s|\s+is)\s+the\s+(?:most|only)\s+interesting\s+thing\s+about\s+(?:you|u)\b",
    r"\b(?:congratulations|well\s+done|bravo)\b[^.!?]{0,20}\bon\s+being\s+(?:the\s+)?(?:most\s+|biggest\s+|least\s+)?[\w-]+",
)
# Denials and compliments that are the insult ("you're not special", "it's adorable that you think ..."): these are
# checked without the negation and teasing guards (still not when retold or quoted).
SNEERS = _any(
    r"\b(?:you(?:'re|\s+are)|ur)\s+not\s+(?:special|important|interesting|funny|clever|smart|wanted|welcome|missed|loved|"
    r"liked|needed|a\s+victim)\b(?!\s+(?:alone|the\s+only))",
    r"\b(?:cute|adorable|sweet|precious|funny|hilarious)\s+(?:that|how)\s+(?:you|u)\s+(?:\w+\s+)?(?:think|believe|imagine|pretend)\b",
    r"\b(?:you|u)\s+(?:don't|do\s+not|dont)\s+(?:matter|count|deserve\s+(?:help|kindness|love|sympathy|anything))\b",
)
# Words before "you" that make the insult reported, quoted or denied, not said ("called you useless", "you are not a
# failure", "you might feel like a burden"): the contempt rules hold back on them.
REPORTED = re.compile(
    r"(?:\b(?:call(?:s|ed|ing)?|told|tell(?:s|ing)?|sa(?:y|ys|id|ying)|shout(?:s|ed|ing)?|yell(?:s|ed|ing)?|"
    r"scream(?:s|ed|ing)?|wrote|writ(?:e|es|ing)|text(?:s|ed)?|think(?:s|ing)?|thought|believ(?:e|es|ed|ing)|"
    r"feel(?:s|ing)?|felt|like|mean(?:s|t)?|make(?:s)?|made|as\s+if|as\s+though|convinced|worr(?:y|ies|ied|ying)|"
    r"fear(?:s|ed)?|afraid|assum(?:e|es|ed|ing)|decid(?:e|es|ed|ing)|conclud(?:e|es|ed|ing)|convinc(?:e|es|ed|ing)|accus(?:e|es|ed|ing)|judg(?:e|es|ed|ing)|wonder(?:ing)?|if|whether|ask(?:s|ed|ing)?|(?:true|untrue|lie|false|myth|nonsense)\s+that|doesn't|does\s+not|isn't|is\s+not|"
    r"not|never|insist(?:s|ed)?|claim(?:s|ed)?|suggest(?:s|ed)?|imply|implies|implied|hear(?:ing)?|heard|"
    r"being|been|words?\s+like|label(?:led|ed)?|nam(?:e|ed)|treat(?:s|ed)?)\b(?:\s+(?:you|u|him|her|them|me|us|everyone|people|yourself))?"
    r"[\s,'\"]*(?:that\s+|like\s+)?$)", re.I)
# Reporting anywhere in the clause: someone else's words, retold ("she told you nobody would ever love you").
RETOLD = re.compile(r"\b(?:told|tells|tell\s+you|telling|said|says|saying|texted|messaged|wrote|threaten(?:s|ed|ing)|"
                    r"shouted|screamed|yelled|calling\s+you|called\s+you|call\s+you)\b", re.I)
_CLAUSE_END = re.compile(r"[.!?;]\s")
_THREAT_RETOLD = re.compile(r"\b(?:if\s+someone|someone\s+says|says|said|saying|threaten(?:s|ed|ing)?\s+(?:you\s+)?(?:with|that)|"
                            r"told\s+you|like)\s*[,'\"]*\s*$", re.I)
# Teasing that says it is teasing ("you're such a dork, I love it") and trash talk about a game ("I'll beat you at
# chess"): the sentence they sit in is not contempt or a threat. (The classifier and the semantic layer still read it.)
_PLAYFUL = re.compile(r"\b(?:haha\w*|lol|lmao|jk|just\s+kidding|only\s+joking|in\s+the\s+best\s+(?:possible\s+)?way|"
                      r"(?:and\s+)?i\s+love\s+(?:it|that|you)|love\s+you|iconic|sweet|adorable|legend)\b", re.I)
_GAME = re.compile(r"\b(?:at|in|on)\s+(?:\w+\s+){0,2}?(?:chess|cards|games?|match|mario|smash|fifa|tennis|pool|darts|poker|"
                   r"scrabble|monopoly|golf|squash|badminton|ping\s*pong|quiz|trivia|kart|party|tournament|round|race|"
                   r"bowling|football|basketball|arm\s*wrestling|pitch|five-a-side|court|training)\b|\b(?:next\s+time|rematch|enjoy\s+(?:your|ur)\s+win|this\s+round)\b", re.I)
_SENTENCE_END = re.compile(r"[.!?]")
# "I'll shoot you a message", "I'll hit you up": a harm verb whose object is followed by what makes it an idiom
_IDIOM_AFTER = re.compile(r"\s*(?:a\s+(?:message|text|line|call|e-?mail|quick\s+\w+|note)|an\s+e-?mail|up\b|some\s+slack)", re.I)
# What the profanity classifier reads (own_words): the text without quotations, without what follows a word of
# retelling in its sentence, and without the few words a negation denies — the classifier scores words, so "he
# called you a useless idiot" and "you're not stupid" scored as the insults they report or deny.
_QUOTED = re.compile(r"[\"\u201c][^\"\u201c\u201d]{0,400}[\"\u201d]|(?<![\w'])'[^']{1,400}'(?![\w'])")
_RETELLING = re.compile(r"\b(?:told|tells|tell|telling|said|says|saying|texted|messaged|wrote|writing|threaten\w*|shout\w*|"
                        r"scream\w*|yell\w*|call(?:s|ed|ing)?|named|label(?:led|ed|s)?|words?\s+like|being\s+called)\b[^.!?]{0,400}", re.I)
_DENIED = re.compile(r"\b(?:not|never|no\s+longer)\s+(?:[\w'-]+\s+){0,3}[\w'-]+|n't\s+(?:[\w'-]+\s+){0,3}[\w'-]+", re.I)
NEGATED = re.compile(r"\b(?:not|n't|never|no\s+longer|hardly|far\s+from|nothing\s+like|anything\s+but)\b", re.I)
_QUOTE = re.compile(r"[\"\u201c\u201d]|(?:^|\s)'|'(?:\s|$|[.,!?])")

_HARM = (r"(?:kill|murder|stab|shoot|beat|hurt|strangle|choke|break(?!\s+(?:it|the\s+news|this|that)\s+to)|smash|slit|burn|bury|punch|torture|wring|snap|"
         r"torch|bash|batter|kick|slap|drown|poison|cripple|maim|cave\s+in|smack|thump|deck|gut|skin|"
         r"end|finish|destroy|set\s+fire\s+to|burn\s+down|run\s+over|make\s+an\s+example\s+of|teach\s+(?:you|u)\s+a\s+lesson)")
_I_WILL = (r"\b(?:i|we|my\s+(?:mates|boys|lads|friends|brothers))(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|'m\s+gonna|"
           r"\s+gonna|m\s+gonna|\s+are\s+going\s+to|'re\s+going\s+to|'re\s+gonna|\s+are\s+gonna|'m\s+coming\s+to|'d\s+love\s+to|"
           r"\s+swear\s+i(?:'ll|\s+will)|\s+can't\s+wait\s+to|\s+cant\s+wait\s+to|\s+should)\s+")
_WEAPON = (r"(?:knife|knives|gun|pistol|shotgun|rifle|(?:baseball\s+)?bat|hammer|crowbar|machete|acid|petrol|gasoline|"
           r"lighter|brick|axe|blade|razor|rope|bullet|bullets|rounds|iron\s+bar|golf\s+club|cricket\s+bat)")
VEILED_THREATS = _any(
    _I_WILL + r"(?:\w+\s+){0,2}?" + _HARM + r"\w*\s+(?:\w+\s+){0,2}?(?:you|u|your|ur|yours)\b(?!\s+(?:know|see|hear|a\s+(?:message|text|line|call|email)|some\s+slack|a\s+break|at\b|in\b|to\s+it|up\b|back\b|off\s+(?:at|to)))",
    r"\b(?:terrible|awful|horrible|tragic)\s+if\s+(?:something|anything)\s+(?:\w+\s+){0,2}?happened\s+to\s+(?:your|ur)\b",
    r"\b(?:shame|pity|tragedy)\s+if\s+(?:something|anything|someone|somebody)\s+(?:\w+\s+){0,2}?(?:happened|happens|were\s+to\s+happen|was\s+to\s+happen|should\s+happen|went\s+wrong)",
    r"\b(?:shame|pity)\s+if\s+(?:your|the|those|that|this|ur|her|his|their)\s+(?:[\w']+\s+){0,4}?(?:stopped|stop|caught|burned|burnt|broke|"
    r"went\s+missing|got\s+hurt|had\s+an?\s+accident|disappeared|got\s+lost|failed|exploded|crashed|got\s+out|got\s+loose|escaped|fell)",
    r"\bsleep\s+with\s+one\s+eye\s+open\b",
    r"\b(?:count\s+your\s+days|(?:your|ur)\s+days\s+are\s+numbered|say\s+your\s+prayers|(?:better|best|start|time\s+to|go\s+ahead\s+and)\s+(?:start\s+)?say(?:ing)?\s+goodbye\s+to\s+(?:your|ur)|"
    r"(?:better|best)\s+(?:start\s+)?pray(?:ing)?|won't\s+see\s+(?:it|me|us)\s+coming|wont\s+see\s+(?:it|me)\s+coming|"
    r"you\s+won't\s+like\s+what\s+happens|you\s+wont\s+like\s+what\s+happens|you'll\s+regret\s+the\s+day|"
    r"you(?:'ll|\s+will)\s+(?:pay|be\s+sorry)\s+for\s+(?:this|that)|"
    r"(?:your|ur)\s+name\s+(?:is\s+|written\s+)?on\s+it|that's\s+what\s+you've\s+got\s+coming|what's\s+coming\s+to\s+you|"
    r"(?:looking|watch(?:ing)?)\s+over\s+your\s+shoulder|(?:next|last)\s+thing\s+you\s+(?:ever\s+)?(?:do|see)|"
    r"accidents\s+happen|people\s+(?:go\s+missing|disappear)|snitches\s+get|what\s+happens\s+to\s+(?:snitches|grasses|people\s+who|those\s+who))\b",
    r"\bi\s+know\s+(?:where|which|what\s+time|when|what\s+(?:school|car|route|door|house|street))\s+(?:\w+\s+){0,3}?"
    r"(?:you|u|your|ur)(?:'re)?\s*(?:live|lives|work|works|sleep|sleeps|park|parks|walk|walks|leave|leaves|go\s+to|"
    r"kids|children|family|window|house|home|school|car|is\s+yours|are\s+yours|mum|mother|wife|husband|daughter|son)\b",
    r"\bi(?:'ve|\s+have)\s+been\s+(?:watching|following|outside)\s+(?:you|your\s+(?:house|place|home|kids|children|family|flat|car|wife|husband|daughter|son))\b",
    _I_WILL + r"(?:\w+\s+){0,2}?make\s+(?:you|u)\s+regret",
    _I_WILL + r"(?:\w+\s+){0,2}?(?:bring(?:ing)?|come\s+round\s+with|come\s+over\s+with|show\s+up\s+with|turn\s+up\s+with)\s+(?:\w+\s+){0,3}?" + _WEAPON,
    r"\bi(?:'m|\s+am)\s+bringing\s+(?:an?\s+|my\s+)?(?:\w+\s+)?" + _WEAPON,
    r"\b(?:i've|i\s+have|i\s+got|i've\s+got)\s+(?:an?\s+|my\s+)?" + _WEAPON + r"\b[^.!?]{0,40}\b(?:you|u|your|ur)\b",
    _WEAPON + r"\b[^.!?]{0,40}\bthrough\s+(?:your|ur)\s+(?:letterbox|letter\s+box|window|door|windscreen)",
    r"\b(?:you|u)(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to|'re\s+gonna|r\s+gonna|\s+gonna)\s+(?:\w+\s+){0,3}?"
    r"(?:end\s+up|wind\s+up|be\s+found|be|get|go|leave)\s+(?:\w+\s+){0,3}?(?:in\s+a\s+ditch|in\s+the\s+river|in\s+the\s+canal|"
    r"in\s+a\s+body\s+bag|in\s+a\s+box|six\s+feet\s+under|picking\s+(?:your|ur)\s+teeth|through\s+a\s+straw|in\s+pieces|"
    r"in\s+the\s+morgue|in\s+a\s+grave|in\s+an\s+early\s+grave|floating|face\s+down)",
    r"\b(?:you(?:'re|\s+are)|ur|u\s+r|you\s+r)\s+(?:\w+\s+)?(?:getting|gonna\s+get|going\s+to\s+get)\s+(?:jumped|stabbed|shot|battered|beaten|done\s+in|hurt|smacked|knocked\s+out)\b",
    r"\b(?:you(?:'re|\s+are)|ur|u\s+r)\s+(?:so\s+|a\s+)?dead\s+(?:meat|man|woman)\b|\b(?:you(?:'re|\s+are)|ur|u\s+r)\s+(?:so\s+)?dead\s*[.!]",
    r"\bmake\s+(?:your|ur)\s+(?:life|days|nights)\s+(?:a\s+)?(?:living\s+)?(?:hell|misery|nightmare|end)\b",
    r"\b(?:don't|dont|do\s+not)\s+be\s+surprised\s+if\s+(?:a|an|something|someone|somebody|your|ur)\b[^.!?]{0,50}"
    r"\b(?:happens|through|fire|burn|brick|hurt|missing|smashed|slashed|accident)",
    r"\b(?:get|got)\s+my\s+hands\s+on\s+(?:you|u)\b",
    r"\b(?:pray|hope)\s+(?:that\s+)?i\s+(?:don't|dont|do\s+not|never)\s+(?:find|see|catch|meet)\s+(?:you|u)\b",
    r"\bor\s+(?:else|i(?:'ll|\s+will)?\s+come\s+(?:round|over|for\s+you)|we\s+come\s+round)\s*(?:[.!?]|$)",
    r"\b(?:slash|let\s+down)\s+(?:your|ur)\s+tyres\b|\b(?:cut|tamper\s+with)\s+(?:your|ur|the)\s+brake",
    # knowing the listener's routine, address or family: "I know you leave for work at seven", "i know ur address"
    r"\b(?:i|we)(?:\s+know|\s+knows|\s+have|\s+got|'ve\s+got|\s+have\s+got)\s+(?:\w+\s+){0,2}?(?:your|ur)\s+(?:home\s+)?(?:address|postcode|routine|"
    r"schedule|shifts?|movements|number\s+plate|reg)\b",
    r"\b(?:i|we)\s+know\s+(?:that\s+)?(?:you|u)\s+(?:leave|get\s+home|walk|park|go\s+out|finish|drive|jog|run)\b[^.!?]{0,40}"
    r"\b(?:at\s+\w+|every|each|alone|on\s+your\s+own|the\s+same)\b",
    r"\b(?:i|we)\s+know\s+(?:which|what|where)\s+(?:hospital|school|ward|nursery|care\s+home|gym|office|door|route)\b",
    r"\b(?:your|ur)\s+(?:\w+\s+){0,2}?(?:daughter|son|kids|children|wife|husband|partner|mum|mother|dad|father|gran|family|girlfriend|"
    r"boyfriend)(?:'s)?\b[^.!?]{0,60},\s*(?:doesn't|don't|isn't|aren't|wasn't|won't|didn't|hasn't)\s+(?:it|she|he|they|there)\s*\?",
    # ultimatums and consequences: "or someone gets hurt", "see what happens to ur sister"
    r"\bor\s+(?:someone|somebody|people|your\s+\w+|ur\s+\w+)\b[^.!?]{0,20}\b(?:gets?|is\s+going\s+to\s+get|will\s+get|'ll\s+get)\s+hurt\b",
    r"\bsee\s+what\s+happens\s+to\s+(?:your|ur|you)\b|\bsee\s+how\s+far\s+(?:you|u)\s+get\b",
    r"\b(?:find|finds|found|show\s+you|learn)\s+(?:out\s+)?what\s+(?:real\s+)?pain\s+(?:is|feels\s+like|really\s+is)\b",
    r"\bcarry\s+(?:you|u)\s+out\b|\bpieces\s+of\s+(?:you|u)\b|\b(?:run|runs|running)\s+(?:you|u)\s+off\s+the\s+road\b",
    r"\b(?:take|break|burn|destroy|smash)\s+something\s+of\s+(?:yours|urs)\b|\bstart\s+with\s+(?:your|ur)\s+\w+\s+and\s+work\b",
    r"\b(?:pay|paying)\s+(?:your|ur)\s+(?:kids|children|family|wife|husband|daughter|son|mum|mother|dad|gran|parents)\s+a\s+(?:little\s+)?visit\b",
    r"\byou(?:'ll|\s+will)\s+be\s+(?:the\s+)?next\s+(?:story|victim|headline|one\s+in\s+the\s+ground)\b",
    r"\bthe\s+last\s+(?:person|guy|man|woman|one|bloke|idiot)\s+(?:who|that)\s+(?:crossed|grassed|snitched|talked|messed\s+with|"
    r"lied\s+to|stole\s+from|double-crossed)\s+me\b",
    r"\bpeople\s+who\s+(?:talk|go|run|speak)\s+(?:to\s+)?(?:the\s+)?(?:police|cops|press|papers|feds)\b[^.!?]{0,30}\b(?:accidents?|"
    r"end\s+up|disappear|regret|get\s+hurt|don't\s+last)|\bsnitches\s+(?:don't|dont|never)\s+last\b",
    r"\bno\s+(?:neighbours|neighbors|one|body|witnesses)\s+(?:around\s+)?to\s+(?:hear|see)\s+(?:anything|you|a\s+thing|what)\b",
    r"\b(?:not|never)\s+(?:going\s+to|gonna)\s+ask\s+(?:you\s+)?(?:nicely|again)\b|\b(?:this\s+is\s+your\s+)?last\s+warning\b",
    r"\b(?:i'll|i\s+will|we'll)\s+be\s+(?:there|seeing\s+you|watching(?:\s+you)?|waiting)\b[^.!?]{0,40}\b(?:whether\s+you\s+like\s+it|"
    r"not\s+to\s+chat|when\s+you\s+least|turn\s+around|usual\s+way|wherever\s+you\s+go|every\s+step)"
    r"|\bturn\s+around\s+and\s+i(?:'ll|\s+will)\s+be\s+there\b",
    r"\bleave\s+(?:town|the\s+country|the\s+area)\s+while\s+(?:you|u)\s+(?:still\s+)?can\b",
    r"\b(?:one\s+match|a\s+(?:can|jerry\s*can)\s+of\s+petrol|petrol\s+in\s+my)\b.{0,60}\b(?:your|ur|yours|urs)\b"
    r"|\b(?:your|ur)\s+(?:\w+\s+){0,3}?(?:would\s+make\s+a\s+(?:lovely\s+)?bonfire|go(?:es)?\s+up\s+in\s+flames|is\s+history)\b"
    r"|\b(?:houses?|shops?|flats?|cars?)\s+like\s+yours\s+(?:\w+\s+)?(?:burn|go\s+up|catch\s+fire)",
    _WEAPON + r"\b[^.!?]{0,30}\b(?:nothing\s+to\s+lose|think\s+carefully|so\s+think|your\s+call)\b",
    r"\byou(?:'ll|\s+will)\s+regret\s+(?:ever|the\s+day)\b|\bkeep\s+(?:them|it|her|him|things)\s+that\s+way\s+by\b",
    r"\bthink\s+about\s+(?:your|ur)\s+(?:\w+(?:'s)?\s+)?safety\s+before\b|\bhope\s+(?:you've\s+got|you\s+have|your)\s+(?:good\s+)?"
    r"(?:home\s+|house\s+|car\s+|life\s+)?insurance\b|\bcheck\s+under\s+(?:your|ur)\s+car\b",
    r"\bone\s+(?:phone\s+call|call|word|text|message)\s+(?:from\s+me\s+)?and\s+(?:your|ur|you)\b|\b(?:you|u)(?:'ll)?\s+lose\s+a\s+lot\s+more\b",
    r"\b(?:you|u)\s+(?:won't|will\s+not|wont)\s+make\s+it\s+to\s+(?:the\s+)?(?:court|courthouse|trial|hearing|police\s+station|station)\b",
    r"\bkeep\s+(?:ignoring|blocking|avoiding|ghosting)\s+me\s+and\b|\bafter\s+that,?\s+(?:it's|its|it\s+is)\s+out\s+of\s+my\s+hands\b",
    r"\b(?:with\s+a\s+)?broken\s+(?:neck|legs?|kneecaps?|jaw)\b[^.!?]{0,30}\b(?:let's\s+see|we'll\s+see)|\b(?:let's|we'll)\s+see\s+how\s+\w+\s+(?:you|u)\s+(?:are|feel)\s+(?:with|after|when)\b",
)


def _clause_before(text: str, start: int) -> str:
    """The clause that leads up to `start` (at most 60 characters)."""
    return _CLAUSE_END.split(text[max(0, start - 60):start])[-1]


def _said_by_someone_else(text: str, start: int) -> bool:
    """Whether the words at `start` are inside a quotation or retold in the clause before them."""
    clause = _clause_before(text, start)
    return len(_QUOTE.findall(clause)) % 2 == 1 or bool(RETOLD.search(clause))


def _sentence_after(text: str, end: int) -> str:
    return _SENTENCE_END.split(text[end:end + 120])[0]


def _reported(text: str, m: re.Match) -> bool:
    """Quoted, retold, or led by a word that reports or frames it ("called", "you might feel", "if")."""
    return _said_by_someone_else(text, m.start()) or bool(REPORTED.search(_clause_before(text, m.start())))


def insult_held_back(text: str, m: re.Match) -> bool:
    """An insult's words that are retold, quoted or denied (rules.py's named insults use this too)."""
    return _reported(text, m) or bool(NEGATED.search(_clause_before(text, m.start())[-20:]))


def threat_held_back(text: str, m: re.Match) -> bool:
    """A threat's words that are retold, quoted, about a game or an idiom (rules.py's explicit threats use this)."""
    ends_on_you = re.search(r"\b(?:you|u)$", m.group(), re.I) is not None
    return bool(_said_by_someone_else(text, m.start()) or _THREAT_RETOLD.search(_clause_before(text, m.start()))
                or _GAME.search(m.group() + _sentence_after(text, m.end()))
                or (ends_on_you and _IDIOM_AFTER.match(text, m.end())))


def contempt(text: str) -> bool:
    """Contempt said, not denied (within the match too) and not teasing that says so."""
    return any(not (insult_held_back(text, m) or NEGATED.search(m.group())
                    or _PLAYFUL.search(_clause_before(text, m.start()) + _sentence_after(text, m.end())))
               for p in CONTEMPT for m in p.finditer(text))


def sneer(text: str) -> bool:
    """A sneer is a denial or a compliment in form, so only quoting and retelling hold it back."""
    return any(not _reported(text, m) for p in SNEERS for m in p.finditer(text))


def veiled_threat(text: str) -> bool:
    return any(not threat_held_back(text, m) for p in VEILED_THREATS for m in p.finditer(text))


def own_words(text: str) -> str:
    """The text less what it quotes, retells or denies (for the classifier; see _QUOTED)."""
    text = text.replace("\u2019", "'")
    return _DENIED.sub(" ", _RETELLING.sub(" ", _QUOTED.sub(" ", text)))


def findings(text: str) -> list[Finding]:
    text = text.replace("\u2019", "'")
    out = []
    if contempt(text) or sneer(text):
        out.append(Finding("abuse", 0.9, "rule", "contempt"))
    if veiled_threat(text):
        out.append(Finding("violence", 0.9, "rule", "veiled threat"))
    return out
