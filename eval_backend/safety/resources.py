"""The crisis notice and its help resources.

The list is a JSON file shipped with the package (help_resources.json) that an operator can replace with
EMPATHY_ARENA_HELP_RESOURCES=path. It is operator text, but it is still rendered inert (names escaped, only
https links) so a bad edit cannot inject markup into the page.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..inert import md_inline

DEFAULT_PATH = Path(__file__).with_name("help_resources.json")

NOTICE = ("**If you are going through a hard time, you do not have to face it alone.** "
          "Talking to someone can help — a trained listener is available free and in confidence, "
          "day and night, in many countries. If you are in immediate danger, please call your local "
          "emergency number. You can keep using the arena whenever you like.")


def _path() -> Path:
    return Path(os.environ.get("EMPATHY_ARENA_HELP_RESOURCES", "").strip() or DEFAULT_PATH)


def _load() -> dict:
    path = _path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"help resources {path}: cannot read ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("resources"), list):
        raise ValueError(f"help resources {path}: expected an object with a 'resources' list")
    for entry in [data.get("directory"), *data["resources"]]:
        if entry is None:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            raise ValueError(f"help resources {path}: every entry needs a name")
        url = entry.get("url")
        if url is not None and not (isinstance(url, str) and url.startswith("https://")):
            raise ValueError(f"help resources {path}: {entry['name']!r}: url must start with https://")
    return data


def help_resources() -> list[dict]:
    """The directory (first, marked "directory": True) then the listed resources, as dicts."""
    data = _load()
    out = []
    if isinstance(data.get("directory"), dict):
        out.append({**data["directory"], "directory": True})
    out.extend(dict(r) for r in data["resources"])
    return out


def _line(entry: dict) -> str:
    name = md_inline(entry["name"])
    label = f"[{name}]({entry['url']})" if entry.get("url") else name
    bits = [label]
    if entry.get("region"):
        bits.insert(0, f"{md_inline(entry['region'])}:")
    if entry.get("phone"):
        bits.append(f"— {md_inline(entry['phone'])}")
    if entry.get("note"):
        bits.append(f"({md_inline(entry['note'])})")
    return "- " + " ".join(bits)


def crisis_notice_markdown() -> str:
    """A calm notice with help resources. It does not diagnose and does not block anything; it is shown next to
    the page's content."""
    try:
        entries = help_resources()
    except ValueError:
        entries = [{"name": "Find A Helpline — helplines by country", "url": "https://findahelpline.com"}]
    return NOTICE + "\n\n" + "\n".join(_line(e) for e in entries)
