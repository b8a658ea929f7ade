"""Untrusted text made inert for each place it is shown: Markdown, plotly labels, spreadsheet cells.

Untrusted: anything a stranger or a submitted model can influence (replies, transcripts, vote reasons, model
and submitter names, organisations, job messages and logs, endpoint error text, benchmark texts).

- `md(text)`: Markdown source that displays `text` as plain text in `gr.Markdown`. Gradio renders Markdown in
  the browser (marked, GFM: autolinks for bare `http://`, `www.` and e-mail addresses; raw HTML; its own `$$`
  LaTeX and ```` ```mermaid ```` passes before parsing; the sanitiser keeps images and links). Every construct
  that makes a link, an image, HTML, code, LaTeX or any formatting starts with an ASCII punctuation character
  (`<`, `[`, `!`, `:`, `.`, `@`, `$`, `` ` ``, `&`, `*`, `#`, `|`, ...) or with an indentation. So every ASCII
  punctuation character is backslash-escaped (CommonMark: "any ASCII punctuation character may be
  backslash-escaped" and then stands for itself), leading whitespace becomes no-break spaces (never an
  indented code block), and line breaks become hard breaks (`\\` + newline), so no line ever starts a block.
  Bidirectional-override and control characters become U+FFFD: they could reorder the page's own text
  around them.
- `plot_text(text)`: plotly renders a pseudo-HTML subset in titles, ticks, legends and hover text (`<a href>`,
  `<b>`, `<br>`); HTML-escaping `<`, `>` and `&` shows the text as is.
- `csv_cell(value)` / `csv_uncell(text)`: the OWASP rule against spreadsheet formula injection, reversible.
  A text cell that begins with a formula character (`=`, `+`, `-`, `@`, tab, CR) or with a single quote
  gets one single quote in front; a cell that begins with a single quote followed by one of those
  characters (or a quote) loses its first quote on import. Hence `csv_uncell(csv_cell(v)) == v` for every v.

Tables (`gr.Dataframe`) need no escaping: with datatype "str" (the default, which the app keeps) Gradio sets
each cell's text, never its HTML.
"""
from __future__ import annotations

import html
import re
import string

_PUNCT = frozenset(string.punctuation)          # the 32 ASCII punctuation characters
# Bidi embeddings/overrides/isolates, C0/C1 controls (tab and newline are handled apart), DEL
_UNSAFE = re.compile("[\u202a-\u202e\u2066-\u2069\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile("\r\n|[\r\u2028\u2029\x0b\x0c\x85]")
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CSV_QUOTED = CSV_FORMULA_START + ("'",)
MD_LIMIT = 20_000           # characters of one untrusted text shown in a Markdown component


def clean(text) -> str:
    """Display form of untrusted text: newlines normalised, unsafe control characters made visible (U+FFFD)."""
    s = "" if text is None else str(text)
    return _UNSAFE.sub("\ufffd", _LINE_BREAKS.sub("\n", s))


def md(text, limit: int | None = MD_LIMIT) -> str:
    """Markdown that shows `text` literally (see the module docstring). Longer than `limit`: cut, with "…"."""
    s = clean(text).strip()
    if limit is not None and len(s) > limit:
        s = s[:limit].rstrip() + "…"
    lines = []
    for line in s.split("\n"):
        line = line.rstrip()                   # a line of only (no-break) spaces is an empty line
        body = line.lstrip(" \t")
        indent = line[:len(line) - len(body)].replace("\t", "    ")
        lines.append("\u00a0" * len(indent) + "".join("\\" + c if c in _PUNCT else c for c in body))
    return "\\\n".join(lines)


def md_inline(text, limit: int | None = 200) -> str:
    """`md` on one line (newlines become spaces): for names and short fields inside a sentence or a table."""
    return md(" ".join(clean(text).split("\n")), limit)


def plot_text(text) -> str:
    """A label for plotly (trace names, tick labels, hover text)."""
    return html.escape(clean(text).replace("\n", " "), quote=False)


def csv_cell(value):
    """A cell for a CSV file that spreadsheets open: text that a spreadsheet would run as a formula gets a
    leading single quote (so does text that already starts with one, which keeps the rule reversible)."""
    if isinstance(value, str) and value.startswith(_CSV_QUOTED):
        return "'" + value
    return value


def csv_uncell(text: str) -> str:
    """Undo `csv_cell` on a cell read back from a CSV file."""
    if isinstance(text, str) and len(text) >= 2 and text[0] == "'" and text[1:].startswith(_CSV_QUOTED):
        return text[1:]
    return text
