"""Reading a judge's answer: strict JSON first, then tolerant (code fences, trailing prose, misspelt keys,
"Score: 4"). A value out of range or unreadable raises ParseError; nothing is defaulted or guessed."""
from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from ..judge_prompts import JudgePrompt, Scale


class ParseError(ValueError):
    """The judge's answer could not be read, or a value is out of range."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_REASONISH = ("reason", "resaon", "reasn", "reson", "raeson", "reasoning", "rationale", "explanation", "why",
              "justification", "comment")
_SCOREISH = ("score", "rating", "value", "label", "grade", "rate", "verdict", "answer", "result")


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(key).lower())


def _json_objects(text: str) -> list[str]:
    """Balanced {...} spans, outermost first, ignoring braces inside strings."""
    spans, depth, start, in_str, esc = [], 0, None, None, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'" and depth > 0:
            in_str = ch if ch == '"' else None   # single quotes also occur as apostrophes: only track "
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    return sorted(spans, key=len, reverse=True)


def _loads_lenient(chunk: str) -> Any:
    for attempt in (chunk, re.sub(r",\s*([}\]])", r"\1", chunk)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
        try:  # single-quoted keys, Python literals
            return ast.literal_eval(attempt.replace("true", "True").replace("false", "False").replace("null", "None"))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    raise ParseError("no readable JSON object")


def _alias_table(prompt: JudgePrompt) -> dict[str, str]:
    table = {}
    for name, _ in prompt.fields:
        for alias in (name, *prompt.aliases.get(name, ())):
            table.setdefault(_norm(alias), name)
    return table


def _match_field(key: str, table: dict[str, str]) -> str | None:
    k = _norm(key)
    if k in table:
        return table[k]
    close = difflib.get_close_matches(k, list(table), n=1, cutoff=0.85)
    return table[close[0]] if close else None


def _split_suffix(key: str) -> tuple[str, str]:
    """'c1_resaon' -> ('c1', 'reason'); 'context_fit_score' -> ('context_fit', 'score'); 'c2' -> ('c2', '')."""
    parts = re.split(r"[\s_\-.]+", str(key).strip())
    if len(parts) > 1:
        last = parts[-1].lower()
        if last in _SCOREISH:
            return "_".join(parts[:-1]), "score"
        if last in _REASONISH or difflib.get_close_matches(last, ["reason"], n=1, cutoff=0.6):
            return "_".join(parts[:-1]), "reason"
    return str(key), ""


def _is_reason_key(key: str) -> bool:
    k = _norm(key)
    return k in _REASONISH or bool(difflib.get_close_matches(k, ["reason"], n=1, cutoff=0.6))


def _collect(obj: dict, table: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for key, val in obj.items():
        if isinstance(val, dict):
            name = _match_field(key, table)
            if name is None:                  # e.g. {"scores": {...}} wrapping the fields
                inner_v, inner_r = _collect(val, table)
                values.update({k: v for k, v in inner_v.items() if k not in values})
                reasons.update({k: v for k, v in inner_r.items() if k not in reasons})
                continue
            for ik, iv in val.items():
                if _norm(ik) in _SCOREISH and name not in values:
                    values[name] = iv
                elif _is_reason_key(ik):
                    reasons[name] = str(iv)
            continue
        base, kind = _split_suffix(key)
        name = _match_field(base, table)
        if name is None:
            continue
        if kind == "reason":
            reasons[name] = str(val)
        elif name not in values or kind == "score":
            values[name] = val
    return values, reasons


def read_value(raw: Any, scale: Scale) -> float:
    """One field's value on its scale; raises ParseError for out-of-range or unknown labels."""
    if scale.labels:
        text = _norm(raw if not isinstance(raw, bool) else ("yes" if raw else "no"))
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            text = _norm(f"{raw:g}")
        for label, value in scale.labels:
            if text == _norm(label):
                return value
        # "reply 1", "good." and the like
        hits = [value for label, value in scale.labels if re.search(rf"(^|[^a-z0-9]){re.escape(_norm(label))}($|[^a-z0-9])",
                                                                     str(raw).lower())]
        if len(set(hits)) == 1:
            return hits[0]
        raise ParseError(f"{raw!r} is not one of {scale.describe()}")
    if isinstance(raw, bool):
        raise ParseError(f"{raw!r} is not a number")
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        m = re.fullmatch(r"\s*\[*\s*(-?\d+(?:\.\d+)?)\s*\]*\s*(?:(?:/|out of|of)\s*\d+)?\s*\.?\s*", str(raw))
        if not m:
            raise ParseError(f"{raw!r} is not a number")
        value = float(m.group(1))
    if not (scale.lo <= value <= scale.hi):
        raise ParseError(f"{value:g} is outside {scale.lo:g}-{scale.hi:g}")
    return value


@dataclass
class Parsed:
    values: dict[str, float]
    reasons: dict[str, str]
    mode: str                      # strict | tolerant | text


def _regex_fields(text: str, prompt: JudgePrompt) -> dict[str, str]:
    """Last resort for prose answers: 'C1: 4', 'Coherence - Good', 'Score: 4' (single-field prompts)."""
    found = {}
    for name, scale in prompt.fields:
        names = [name, *prompt.aliases.get(name, ())]
        if len(prompt.fields) == 1:
            names += ["score", "rating"]
        value_rx = (r"(" + "|".join(re.escape(l) for l, _ in scale.labels) + r")\b" if scale.labels
                    else r"(-?\d+(?:\.\d+)?)")
        for alias in names:
            words = "[ _-]?".join(re.escape(w) for w in re.split(r"[ _-]+", alias))
            rx = re.compile(rf"\b{words}"
                            rf"(?:[ _-]?(?:score|rating))?\W{{0,4}}[:=\-]\s*\**\s*\[*\s*{value_rx}", re.I)
            m = rx.search(text)
            if m:
                found[name] = m.group(1)
                break
    return found


def parse_answer(text: str, prompt: JudgePrompt) -> Parsed:
    """Strict JSON first, then tolerant; raises ParseError (never guesses a value)."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty answer")
    table = _alias_table(prompt)
    wanted = [name for name, _ in prompt.fields]
    scales = dict(prompt.fields)
    candidates: list[tuple[str, Any]] = []
    try:
        candidates.append(("strict", json.loads(text)))
    except ValueError:
        pass
    for chunk in _FENCE.findall(text) + _json_objects(text):
        try:
            candidates.append(("tolerant", _loads_lenient(chunk.strip())))
        except ParseError:
            continue
    last_error: ParseError | None = None
    for mode, obj in candidates:
        if not isinstance(obj, dict):
            continue
        raw_values, reasons = _collect(obj, table)
        if mode == "strict" and set(obj) != set(wanted):
            mode = "tolerant"
        missing = [k for k in wanted if k not in raw_values]
        if missing:
            last_error = ParseError(f"answer lacks {', '.join(missing)}")
            continue
        try:
            values = {k: read_value(raw_values[k], scales[k]) for k in wanted}
        except ParseError as exc:   # out of range in JSON: not rescued by a prose fallback
            raise exc
        return Parsed(values, reasons, mode)
    loose = _regex_fields(text, prompt)
    if all(k in loose for k in wanted):
        return Parsed({k: read_value(loose[k], scales[k]) for k in wanted}, {}, "text")
    raise last_error or ParseError("no readable answer")
