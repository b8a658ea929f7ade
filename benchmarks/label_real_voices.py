"""Writes eval_backend/baselines/real_voices.csv: the real recordings the cue detector is calibrated and
validated on, their labels, the rationale of each label and the calibration / validation split.

    python benchmarks/label_real_voices.py          # rewrites the CSV (the committed file is the record)

Run once, before any calibration, and committed first (issue 22). It reads only file names, the packages'
own scripts (the words each line says) and nothing the detector measures, so the labels cannot lean on the
detector. The recordings stay in their Debian packages (licences in the CSV; none is copied into the repository):

- pocketsphinx-testdata (BSD-2, CMU; the LibriVox excerpts are public-domain readings): read speech.
- alsa-utils (GPL-2): /usr/share/sounds/alsa, one speaker reading the channel names of a speaker test.
- hedgewars-data (GFDL-1.3): voice packs of the game, each line acted by one speaker; the file name says the line.
- fillets-ng-data-cs (GPL-2): the game's Czech voice-acted dialogue; the English script line of each dialogue id
  (script/<level>/dialogs_en.lua, fillets-ng-data) says what is said. A deterministic sample (every 12th line).

Labels (what a listener hears; see eval_backend/baselines/real_voices.md for the rationale of each rule):
neutral, laughter, shout (a shouted warning cry), effort (a non-verbal effort or pain cry), cough, moan,
cheer, taunt, dismay, exclaimed (a scripted exclamation), acted (any other acted game line).
Split: by *group* (a voice pack, a game level, a recording session), so no speaker of a validation group is
heard in calibration where the packages tell speakers apart: groups sorted by sha256("issue22:" + group) and
dealt alternately to calibration and validation within each source.
"""
from __future__ import annotations

import csv
import glob
import hashlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "eval_backend" / "baselines" / "real_voices.csv"
PS = "/usr/share/pocketsphinx/test/data"
HW = "/usr/share/games/hedgewars/Data/Sounds/voices"
FN = "/usr/share/games/fillets-ng"
HW_ENGLISH_PACKS = ("Default", "British", "Classic", "HillBilly", "Mobster", "Pirate", "Singer", "Surfer")
FIELDS = ("id", "package", "licence", "group", "split", "label", "words", "rationale")

PS_WORDS = {
    "cards/001.wav": "ten of clubs", "cards/002.wav": "four queen of clubs", "cards/003.wav": "seven of clubs",
    "cards/004.wav": "five five", "cards/005.wav": "eight of spades four of clubs seven of hearts",
    "goforward.raw": "go forward ten meters", "something.raw": "go somewhere and do something",
}

# hedgewars line -> (label, words); the file name is the line the actor was asked to perform
HW_LINES = {
    "Laugh": ("laughter", ""),
    "PoisonCough": ("cough", ""), "PoisonMoan": ("moan", ""),
    **{f"Ow{i}": ("effort", "") for i in range(1, 5)}, "Ouch": ("effort", "ouch"),
    **{f"Ooff{i}": ("effort", "") for i in range(1, 4)},
    **{f"Jump{i}": ("effort", "") for i in range(1, 4)},
    **{f"Firepunch{i}": ("effort", "") for i in range(1, 7)},
    "Incoming": ("shout", "incoming"), "Takecover": ("shout", "take cover"), "Runaway": ("shout", "run away"),
    "Watchit": ("shout", "watch it"), "Hurry": ("shout", "hurry"), "Kamikaze": ("shout", "kamikaze"),
    "Nooo": ("shout", "no"), "Fire": ("shout", "fire"),
    "Amazing": ("cheer", "amazing"), "Brilliant": ("cheer", "brilliant"), "Excellent": ("cheer", "excellent"),
    "Flawless": ("cheer", "flawless"), "Victory": ("cheer", "victory"), "Enemydown": ("cheer", "enemy down"),
    "Firstblood": ("cheer", "first blood"),
    "Illgetyou": ("taunt", "i'll get you"), "Gonnagetyou": ("taunt", "gonna get you"),
    "Justyouwait": ("taunt", "just you wait"), "Youllregretthat": ("taunt", "you'll regret that"),
    "Revenge": ("taunt", "revenge"), "Coward": ("taunt", "coward"), "Stupid": ("taunt", "stupid"),
    "Traitor": ("taunt", "traitor"), "Comeonthen": ("taunt", "come on then"), "Nutter": ("taunt", "nutter"),
    "Ohdear": ("dismay", "oh dear"), "Oops": ("dismay", "oops"), "Uh-oh": ("dismay", "uh oh"),
    "Drat": ("dismay", "drat"), "Bugger": ("dismay", "bugger"), "Missed": ("dismay", "missed"),
    "Whatthe": ("dismay", "what the"),
}

RATIONALE = {
    "neutral_read": "read speech (a lab prompt or an audiobook): a steady reading voice, no emotion, no noise "
                    "a listener would remark on",
    "neutral_alsa": "a calm voice reading a channel name for a speaker test",
    "neutral_dialogue": "voice-acted dialogue whose script line is a plain statement or question (no '!', no "
                        "interjection, no trailing '...'): conversational delivery",
    "exclaimed_dialogue": "voice-acted dialogue whose script line is an exclamation ('!'): a raised, animated "
                          "delivery is likely but its kind is not known",
    "laughter": "the game's 'Laugh' line: the character laughs (no words)",
    "cough": "the game's 'PoisonCough' line: coughing (no words)",
    "moan": "the game's 'PoisonMoan' line: a moan of discomfort (no words)",
    "effort": "a non-verbal cry of pain or effort (the game's Ow / Ooff / Ouch / Jump / Firepunch lines)",
    "shout": "a warning or alarm cry ('Incoming!', 'Take cover!'): shouted in the game's battle voice",
    "cheer": "a cheer after a good shot ('Amazing!', 'Victory!'): excited, pleased",
    "taunt": "a threat or taunt at the enemy ('I'll get you!'): aggressive",
    "dismay": "a reaction to a mishap ('Oops', 'Oh dear'): dismay",
    "acted": "another acted game line (greeting, reply): expressive, no single cue",
}


def _split(groups_by_source: dict[str, list[str]]) -> dict[str, str]:
    out = {}
    for groups in groups_by_source.values():
        ordered = sorted(set(groups), key=lambda g: hashlib.sha256(f"issue22:{g}".encode()).hexdigest())
        for i, g in enumerate(ordered):
            out[g] = "calibration" if i % 2 == 0 else "validation"
    return out


def fillets_script() -> dict[tuple[str, str], str]:
    lines = {}
    pattern = re.compile(r'dialogId\("([^"]+)",\s*"[^"]*",\s*"((?:[^"\\]|\\.)*)"\)')
    for f in glob.glob(f"{FN}/script/*/dialogs_en.lua"):
        level = Path(f).parent.name
        for m in pattern.finditer(Path(f).read_text(encoding="utf-8", errors="replace")):
            lines[(level, m.group(1))] = m.group(2)
    return lines


def rows() -> list[dict]:
    out: list[dict] = []
    # pocketsphinx-testdata
    ps_files = sorted(glob.glob(f"{PS}/cards/*.wav")) + sorted(glob.glob(f"{PS}/librivox/*.wav")) + \
        [f"{PS}/{x}" for x in ("goforward.raw", "numbers.raw", "something.raw", "tidigits/dhd.2934z.raw")]
    for f in ps_files:
        rel = os.path.relpath(f, PS)
        group = "pocketsphinx/" + ("cards" if rel.startswith("cards") else "librivox" if "librivox" in rel
                                   else "prompts")
        out.append({"id": f"pocketsphinx-testdata:{rel}", "package": "pocketsphinx-testdata",
                    "licence": "BSD-2 (CMU); LibriVox readings are public domain", "group": group,
                    "label": "neutral", "words": PS_WORDS.get(rel, ""), "rationale": RATIONALE["neutral_read"]})
    # alsa-utils
    for f in sorted(glob.glob("/usr/share/sounds/alsa/*.wav")):
        name = Path(f).stem
        if name == "Noise":
            continue
        out.append({"id": f"alsa-utils:{name}.wav", "package": "alsa-utils", "licence": "GPL-2", "group": "alsa",
                    "label": "neutral", "words": name.replace("_", " ").lower(),
                    "rationale": RATIONALE["neutral_alsa"]})
    # hedgewars-data
    for pack in HW_ENGLISH_PACKS:
        for f in sorted(glob.glob(f"{HW}/{pack}/*.ogg")):
            line = Path(f).stem
            label, words = HW_LINES.get(line, ("acted", ""))
            out.append({"id": f"hedgewars-data:{pack}/{line}.ogg", "package": "hedgewars-data",
                        "licence": "GFDL-1.3", "group": f"hedgewars/{pack}", "label": label, "words": words,
                        "rationale": RATIONALE[label]})
    # fillets-ng-data-cs: every 12th line that has an English script line
    script = fillets_script()
    lines = []
    for f in sorted(glob.glob(f"{FN}/sound/*/cs/*.ogg")):
        level, key = Path(f).parts[-3], Path(f).stem
        if (level, key) in script:
            lines.append((f, level, key, script[(level, key)]))
    for f, level, key, text in lines[::12]:
        plain = "!" not in text and "..." not in text and not re.search(r"\b(ha|oh|ah|ugh|wow|hey)\b", text, re.I)
        label, why = ("neutral", RATIONALE["neutral_dialogue"]) if plain else \
            ("exclaimed", RATIONALE["exclaimed_dialogue"])
        out.append({"id": f"fillets-ng-data-cs:{level}/cs/{key}.ogg", "package": "fillets-ng-data-cs",
                    "licence": "GPL-2", "group": f"fillets/{level}", "label": label,
                    "words": f"(Czech; English script: {text})", "rationale": why})
    by_source: dict[str, list[str]] = {}
    for r in out:
        by_source.setdefault(r["package"], []).append(r["group"])
    split = _split(by_source)
    for r in out:
        r["split"] = split[r["group"]]
    return out


def main() -> int:
    data = rows()
    with OUT.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(data)
    counts: dict[tuple[str, str], int] = {}
    for r in data:
        counts[(r["split"], r["label"])] = counts.get((r["split"], r["label"]), 0) + 1
    for k in sorted(counts):
        print(*k, counts[k])
    print(f"{len(data)} recordings -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
