"""Indirect signs of a crisis in a person's own words (issue 26, rules-4): what the first-person phrasings in rules.py
("I want to die") do not say — farewells ("this is the last time you'll hear from me"), a note, the means ("how many
of my sleeping pills it would take"), arrangements for after ("make sure someone feeds my cat after this week"),
belongings given away because they "won't be needed". A sign gives a crisis reading (the help notice, 0.6), never a
hold; the notice may err towards showing, so these are wider than a rule that holds a reply would be.

Written for this project while looking at the crisis statements the screen missed on the spent sets and a
development set written apart (2026-12-03); bounded repetitions only, as in directed.py.
"""
from __future__ import annotations

import re


def _any(*patterns: str) -> list[re.Pattern]:
    return [re.compile(p, re.I) for p in patterns]


SIGNS = _any(
    # farewells and the time after
    r"\b(?:this\s+is|it's|its|that's)\s+the\s+last\s+(?:time\s+)?(?:you(?:'ll|\s+will)|anyone|u\s+will|you'll\s+ever)\s+(?:ever\s+)?hear\s+from\s+me\b",
    r"\b(?:by\s+the\s+time\s+(?:you|anyone|u)\s+(?:read|reads|get|gets|hear|hears|see|sees|find|finds)\s+this)\b",
    r"\bwhoever\s+finds\s+(?:this|me)\b",
    r"\b(?:if|when|after|once|after\s+that|by\s+the\s+time)\s+i(?:'m|\s+am|m)\s+(?:gone|not\s+here|not\s+around|no\s+longer\s+(?:here|around))\b"
    r"(?!\s+(?:for|by|on|till|until|over|all|a|this|next|the|at|to|from|in))",
    r"\bi\s+(?:won't|will\s+not|wont)\s+be\s+(?:around|here)\s+(?:much\s+longer|for\s+much\s+longer|anymore|any\s+more|to\s+see)\b",
    r"\b(?:consider\s+this|this\s+is)\s+(?:my\s+)?(?:goodbye|farewell)\b|\bgoodbye\s+(?:forever|for\s+good|everyone,?\s+(?:i|thank))\b",
    r"\bif\s+anything\s+(?:happens|should\s+happen|were\s+to\s+happen)\s+to\s+me\b",
    r"\b(?:take\s+care\s+of|look\s+after)\s+(?:yourself|each\s+other|mum|dad|my\s+\w+)\s+(?:after\s+(?:this|today|tonight|i'm\s+gone)|when\s+i'm\s+gone|for\s+me\s+when)\b",
    # notes
    r"\b(?:my|the|a|her|this)\s+(?:suicide\s+|goodbye\s+|last\s+|final\s+)?note\b[^.!?]{0,40}\b(?:is\s+(?:on|in|under)|for\s+(?:my|the|everyone)|explain|wording|tearing|rewriting|writing)\b"
    r"|\b(?:writing|wrote|written|rewriting|finished|finish)\s+(?:my|the|a)\s+(?:suicide\s+|goodbye\s+|last\s+|final\s+)?(?:note|letters?)\s+(?:to|for)\s+(?:everyone|the\s+kids|my\s+(?:kids|children|family)|each\s+of\s+you|all\s+of\s+you)\b"
    r"|\b(?:suicide|goodbye|farewell|final)\s+(?:note|letter|message|video)s?\b",
    # means
    r"\bhow\s+many\s+(?:of\s+(?:my|these|the)\s+)?(?:\w+\s+)?(?:pills|tablets|paracetamol|painkillers|sleeping\s+pills|meds|capsules)\b(?![^.!?]{0,50}\b(?:a\s+day|per\s+day|in\s+a\s+day|safely|"
    r"maximum|max|dose\s+for|each\s+day|daily))[^.!?]{0,30}\b(?:take|need|enough|kill|lethal|fatal|overdose|would\s+it)",
    r"\b(?:stockpil\w+|sav(?:ing|ed)\s+up|hoard\w*|collect(?:ing|ed))\s+(?:my\s+|all\s+my\s+|the\s+)?(?:pills|tablets|meds|medication|painkillers|sleeping\s+pills)\b",
    r"\b(?:looked|looking|look|searched|searching|googled|googling)\s+up\s+how\s+(?:many|much|high|far|long|deep|tall)\b[^.!?]{0,60}\b(?:pills|tablets|fall|drop|bridge|building|storeys|floors|take|die|drown|bleed|lethal|certain|fatal)"
    r"(?![^.!?]{0,30}\b(?:a\s+day|per\s+day|in\s+a\s+day|safely|for\s+my\s+(?:back|head|tooth|knee)))",
    r"\bhow\s+(?:high|tall|far\s+down|many\s+storeys|many\s+floors)\s+(?:a|the|you|it|that)\b[^.!?]{0,40}\b(?:fall|drop|jump|survive|certain|enough|need)\b",
    r"\b(?:let\s+go\s+of\s+the\s+wheel|step\s+(?:out\s+)?in\s+front\s+of\s+(?:a|the)\s+(?:train|bus|lorry|truck|car)|"
    r"(?:drive|steer|swerve)\s+(?:\w+\s+)?(?:into|off)\s+(?:a|the)\s+(?:wall|tree|river|bridge|cliff|lorry|truck|oncoming)|"
    r"jump(?:ing)?\s+(?:off|from|in\s+front\s+of)\s+(?:the|a|that)\s+(?:bridge|roof|building|cliff|car\s+park|multi-storey|platform|train)|"
    r"walk(?:ing)?\s+into\s+the\s+(?:sea|river|lake|water)\s+and\s+(?:not|never|keep))\b",
    r"\b(?:train\s+timetable|the\s+tracks|the\s+bridge|the\s+edge|the\s+cliff|the\s+roof)\b[^.!?]{0,60}\b(?:how\s+easy|so\s+easy|would\s+be\s+easy|easy\s+it\s+would\s+be|just\s+end|never\s+come\s+back)",
    # belongings and care
    r"\b(?:won't|will\s+not|wont|don't|do\s+not|dont)\s+(?:need|be\s+needing|have\s+any\s+use\s+for)\s+(?:it|them|these|this|any\s+of\s+(?:it|this|them)|my\s+\w+)\s+"
    r"(?:anymore|any\s+more|much\s+longer|where\s+i'm\s+going|after\s+(?:this|tonight|next\s+week))\b",
    r"\bwhere\s+i(?:'m|\s+am)\s+going\s+(?:i|there)\s+(?:won't|wont|will\s+not)\b",
    r"\b(?:giving|given|give)\s+(?:away\s+)?(?:all\s+)?(?:my\s+)?(?:\w+\s+){0,2}?(?:away\s+)?(?:since|because|as)\s+i\s+(?:won't|wont|will\s+not|don't|dont)\s+(?:need|be)\b",
    r"\b(?:make\s+sure|promise)\s+(?:someone|somebody|you(?:'ll)?|u)\s+(?:\w+\s+)?(?:feeds?|looks?\s+after|takes?\s+care\s+of|walks?)\s+(?:my|the)\s+(?:dog|cat|kids|children|plants|rabbit|fish)\b[^.!?]{0,30}\b(?:when|after|once|if)\s+i",
    # not existing
    r"\b(?:not\s+existing|to\s+stop\s+existing|no\s+longer\s+existing|ceas(?:e|ing)\s+to\s+exist)\b",
    r"\bi\s+(?:don't|dont|do\s+not)\s+want\s+to\s+(?:exist|be\s+(?:alive|around|here)\s+anymore|keep\s+(?:going|living|doing\s+this))\b",
    r"\b(?:go\s+to\s+sleep|fall\s+asleep|sleep)\s+and\s+(?:never|not)\s+wake\s+up\b|\bnot\s+wak(?:e|ing)\s+up\s+(?:again|tomorrow|at\s+all)\b",
    r"\bi(?:'m|\s+am|m)\s+(?:just\s+|such\s+)?a\s+burden\s+(?:to|on)\s+(?:everyone|everybody|them|my\s+\w+|all\s+of\s+you|you\s+all)\b",
    r"\b(?:it|this|everything)\s+(?:will|'ll|is\s+going\s+to)\s+(?:all\s+)?be\s+over\s+(?:soon|tonight|by\s+(?:tomorrow|morning|the\s+weekend))\b[^.!?]{0,30}\b(?:for\s+me|i\s+promise|don't\s+worry|you\s+won't|no\s+more)",
    r"\b(?:made|make|making)\s+(?:my\s+)?peace\s+with\s+(?:dying|death|it\s+ending|leaving\s+(?:this|for\s+good))\b",
    r"\b(?:none\s+of\s+(?:this|it)\s+(?:is|was)\s+your\s+fault)\b[^.!?]{0,40}\b(?:i'm|i\s+am|i've|i\s+have)\b|\bplease\s+(?:don't|dont|do\s+not)\s+(?:be\s+angry|blame\s+yourself)\b[^.!?]{0,40}\b(?:with\s+me|for\s+what\s+i)",
    # arrangements for after: "make sure someone feeds my cat after this week"
    r"\b(?:feeds?|walks?|waters?|look\s+after|looks\s+after|take\s+care\s+of|takes\s+care\s+of|give|have|take)\b[^.!?]{0,40}"
    r"\b(?:my|the)\s+(?:cat|dog|kids|children|plants|rabbit|fish|bird|hamster|pets?|budgie)\b[^.!?]{0,30}\b(?:after(?:\s+this\s+week|"
    r"\s+tonight|\s+tomorrow)?\s*(?:[.!?]|$)|for\s+good\b)",
    r"\b(?:need|use|have)\s+(?:it|them|this)\s+after\s*[.!]",
    r"\bbetter\s+off\b.{0,80}\b(?:for\s+good|from\s+now\s+on|never\s+(?:has|have)\s+to\s+see\s+me)",
    r"\bthank\s+you\s+for\s+everything\b(?!.{0,80}\b(?:see\s+you|next|tomorrow|soon|later))[^?]{0,80}\b(?:goodbye|bye|farewell)\b",
    r"\b(?:a|the|my)\s+note\b.{0,60}\b(?:who\s+to\s+leave\s+it|leave\s+it\s+for)\b",
    r"\bhow\s+(?:high|tall|far|deep|long|many|much)\b[^.!?]{0,60}\b(?:don't\s+survive|not\s+survive|won't\s+survive|to\s+be\s+fatal|"
    r"to\s+die|to\s+be\s+sure|to\s+be\s+certain|lethal|fatal)\b",
    r"\bdeserves?\s+(?:a|better\s+than\s+a)\s+(?:mum|mom|mother|dad|father|parent|partner|wife|husband|friend)\s+(?:who|that)\s+"
    r"(?:isn't|is\s+not|wasn't|won't)\b|\bdeserves?\s+better\s+than\s+me\b",
)


def crisis_sign(text: str) -> bool:
    return any(p.search(text) for p in SIGNS)
