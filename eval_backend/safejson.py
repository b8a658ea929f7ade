"""JSON from strangers: bounded in size and nesting before it is parsed.

Python's `json` parses any depth until it hits the recursion limit (a RecursionError, i.e. a 500 or a
traceback), and parses any size it is given. `loads` checks both first, in one linear scan that skips
string contents, and raises `JSONLimitError` (a ValueError) with a message fit to show the sender.
"""
from __future__ import annotations

import json

MAX_DEPTH = 64            # no document of ours nests deeper than ~6; 64 leaves room for foreign layouts


class JSONLimitError(ValueError):
    """The document is too deep or too large (the message says which and the limit)."""


def nesting_depth(text: str | bytes) -> int:
    """The deepest nesting of objects/arrays in `text`, ignoring brackets inside strings.
    Linear and allocation-free, so it is safe to run on text that is not yet known to be JSON."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    return deepest


def check(text: str | bytes, *, max_depth: int = MAX_DEPTH, max_bytes: int | None = None, what: str = "JSON") -> None:
    """Raise JSONLimitError when `text` is larger than `max_bytes` or nests deeper than `max_depth`."""
    size = len(text.encode("utf-8")) if isinstance(text, str) and max_bytes is not None else len(text)
    if max_bytes is not None and size > max_bytes:
        raise JSONLimitError(f"{what} is too large: {size:,} bytes, the limit is {max_bytes:,}")
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JSONLimitError(f"{what} nests {depth} levels deep; the limit is {max_depth}")


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, max_bytes: int | None = None, what: str = "JSON"):
    """`json.loads` after `check`: a JSONLimitError or json.JSONDecodeError (both ValueError), never a
    RecursionError."""
    check(text, max_depth=max_depth, max_bytes=max_bytes, what=what)
    return json.loads(text)


def unstorable_text(obj) -> bool:
    """True when a string in `obj` (keys included) holds a lone surrogate (JSON's \\ud800 escapes decode to text no
    UTF-8 encoder, database or response writer accepts) or a NUL (PostgreSQL's text cannot hold one). Iterative:
    any depth."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            if "\x00" in x:
                return True
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return False
