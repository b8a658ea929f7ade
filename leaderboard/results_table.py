"""The benchmark leaderboard's table: result JSON documents + the paper's reported rows → a DataFrame.

Pure: no file or network I/O except `load_result_docs` / `load_reported` (plain reads the UI calls).
Rows measured here are ranked only against rows of the same benchmark version; the paper's rows (its own
benchmark) come after them as a section of their own. A board's column holds only that board's metric,
each with its 95% interval beside it.
A cell holds a number, or the text "not computed: <reason>" (never a zero for a missing score).
Our scores are on the scorer's scales (accuracies and most text metrics 0-1, BLEU 0-100, judges
1-5, MOS 1-5); the EchoMind paper's percent figures are divided by 100 into the same columns, and
figures that have no like-for-like counterpart here get their own "(paper)" column.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from eval_backend.numbers import is_number
from eval_backend.scoring.boards import boards, tabled_boards
from eval_backend.scoring.labels import CI_SUFFIX, METRIC_LABELS, metric_label, with_labels
from eval_backend.scoring.registry import FAMILIES

REPORTED_PATH = Path(__file__).parent / "data" / "echomind_reported.json"
REPORTED_SOURCE = "reported, not reproduced here"
MEASURED_SOURCE = "measured here"
NOT_MEASURED = "not computed: not measured by the paper"
# The paper's rows were measured on its own benchmark: they are shown in a section of their own, never
# ranked with the rows measured here.
REPORTED_HEADING = ("Reported by the EchoMind paper, on its own benchmark; for context, not ranked with the "
                    "rows above")
NOT_RANKED = "not ranked"

# The board columns come from the scorer's board registry (eval_backend/scoring/boards.py), single-number boards only.
BOARDS = tuple(b.key for b in tabled_boards())
BOARD_LABELS = {b.key: b.label for b in tabled_boards()}
BOARD_CI = tuple(f"{b} 95% CI" for b in BOARDS)
# What a board's `source` must name for its value to fill the board's column (Board.source): a result whose
# board was filled from another metric is shown as not computed, the other metric staying in its own column.
BOARD_SOURCE = {b.key: b.source for b in tabled_boards()}
SORT_PRESETS = {b.name: b.key for b in tabled_boards()}
# The column groups: the metric families' groups (eval_backend/scoring/registry.py FAMILIES), in its order.
GROUPS = tuple(dict.fromkeys(FAMILIES.values()))
INFO_COLUMNS = ("model", "type", "source", "audio output", "open weights", "organisation", "benchmark")
HEADLINE_INFO = ("model", "type", "source")     # `source` splits the sections; the page does not show it
RANK = "rank"
KINDS = ("baseline", "endpoint", "predictions", "reported")

# paper field -> (our column, factor to our scale, our metric's family). A column that is not one of
# our metric names exists only for the reported rows.
PAPER_COLUMNS: dict[str, tuple[str, float, str]] = {
    "understanding_wer": ("l1.asr_wer", 0.01, "level1"),
    "understanding_semsim": ("l1.semsim (paper)", 0.01, "level1"),      # the paper's encoder, not MiniLM
    "understanding_acc": ("l1.understanding_acc", 0.01, "level1"),
    "reasoning_acc": ("l2.reasoning_acc", 0.01, "reasoning"),
    "audio_nisqa": ("audio.nisqa (paper)", 1.0, "audio"),
    "audio_dnsmos": ("audio.dnsmos_ovrl", 1.0, "audio"),
    "audio_emoalign": ("audio.emoalign (paper)", 0.01, "audio"),   # emotion2vec: not installable here
    "audio_ves": ("l3.ves", 1.0, "judge_audio"),
    "text_bleu": ("l3.bleu4", 1.0, "level3_text"),
    "text_rouge_l": ("l3.rougeL_f", 0.01, "level3_text"),
    "text_meteor": ("l3.meteor", 0.01, "level3_text"),
    "text_bertscore": ("l3.bertscore (paper, rescaled)", 0.01, "level3_text"),  # another model and scale
    "judge_c1_context_fit": ("l3.judge.c1", 1.0, "judge_text"),
    "judge_c2_naturalness": ("l3.judge.c2", 1.0, "judge_text"),
    "judge_c3_colloquialism": ("l3.judge.c3", 1.0, "judge_text"),
    "judge_c4_speech_info_relevance": ("l3.judge.c4", 1.0, "judge_text"),
}


@dataclass(frozen=True)
class ModelInfo:
    """What the table says about a model besides its scores (from the submissions queue or the baselines)."""
    kind: str = "unknown"                  # baseline | endpoint | predictions | reported | unknown
    audio_output: bool | None = None
    open_weights: bool | None = None
    organisation: str | None = None
    licence: str | None = None
    link: str | None = None


@dataclass(frozen=True)
class FilterState:
    """Everything the user can set above the table; also what the shareable URL carries."""
    search: str = ""
    kinds: tuple[str, ...] = KINDS
    audio: str = "any"                     # any | yes | no
    open_weights: str = "any"              # any | yes | no
    groups: tuple[str, ...] = ()           # default: the headline columns (boards and their intervals) only
    sort: str = "LB1"                      # a SORT_PRESETS key
    intervals: bool = False
    all_columns: bool = False              # every info, metric and interval column


# ---------------------------------------------------------------- loading (the only I/O)
def load_result_docs(results_dir: str | Path) -> list[dict]:
    """Every readable results JSON under <data>/results/<model>/; unreadable files are skipped with a note."""
    docs = []
    for path in sorted(Path(results_dir).glob("*/*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and "manifest" in doc and "metrics" in doc:
            doc = {**doc, "_path": str(path)}
            docs.append(doc)
    return docs


def load_reported(path: str | Path = REPORTED_PATH) -> dict:
    return json.loads(Path(path).read_text())


# ---------------------------------------------------------------- choosing documents
def latest_per_model(docs: Iterable[dict], benchmark_hash: str | None = None) -> dict[str, dict]:
    """The newest document per model (by manifest timestamp), optionally only on one benchmark."""
    out: dict[str, dict] = {}
    for d in docs:
        man = d["manifest"]
        if benchmark_hash and man["benchmark"].get("hash") != benchmark_hash:
            continue
        cur = out.get(man["model"])
        if cur is None or man.get("timestamp", "") > cur["manifest"].get("timestamp", ""):
            out[man["model"]] = d
    return out


# ---------------------------------------------------------------- cells
_num = is_number     # a real finite number: a cell that shows as a score


def cell(value, reason: str | None) -> float | str:
    if _num(value):
        return round(float(value), 4)
    r = (reason or "the scorer gave no value and no reason").strip()
    return r if r.startswith("not computed") else f"not computed: {r}"


def ci_text(ci) -> str:
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_num(x) for x in ci):
        return f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    return "—"


def _yes_no(b: bool | None) -> str:
    return "—" if b is None else ("yes" if b else "no")


def board_cell(board: str, entry: dict) -> float | str:
    """A board's cell: its value only when the board was computed from its own metrics (BOARD_SOURCE)."""
    value, source = entry.get("value"), str(entry.get("source") or "")
    if _num(value) and not all(part in source for part in BOARD_SOURCE.get(board, ())):
        if board == "LB2":
            return "not computed: no VES judge configured (DNSMOS OVRL is in its own column)"
        return f"not computed: this result filled {board} from another metric ({source}), so it is not shown"
    return cell(value, entry.get("reason") or f"not computed: board {board} missing from the result")


def measured_row(doc: dict, info: ModelInfo) -> tuple[dict, dict[str, str]]:
    """(row, {column: family}) for one results document."""
    man = doc["manifest"]
    row = {"model": man["model"], "type": info.kind, "source": MEASURED_SOURCE,
           "audio output": _yes_no(info.audio_output), "open weights": _yes_no(info.open_weights),
           "organisation": info.organisation or "",
           "benchmark": f"{man['benchmark'].get('name')} v{man['benchmark'].get('version')}"}
    fams: dict[str, str] = {}
    for name, e in doc["metrics"].items():
        row[name] = cell(e.get("value"), e.get("reason"))
        row[f"{name} 95% CI"] = ci_text(e.get("ci95"))
        fams[name] = e.get("family", "")
    for b in BOARDS:
        e = doc.get("boards", {}).get(b) or {}
        row[b] = board_cell(b, e)
        if not _num(row[b]):
            row[f"{b} 95% CI"] = "—"
        elif e.get("ci95"):
            row[f"{b} 95% CI"] = ci_text(e["ci95"])
        elif b in ("LB2", "selection"):    # a one-metric board carries its metric's interval (older results too)
            metric = str(e.get("source") or "").split(" ")[0]
            row[f"{b} 95% CI"] = row.get(f"{metric} 95% CI", "—")
        else:
            row[f"{b} 95% CI"] = e.get("ci_note") or "no interval: scored before intervals were added"
    return row, fams


class _PaperMetrics(dict):
    """The paper's figures as a results document's metric entries; a metric it does not report reads as such."""
    def get(self, name, default=None):
        return super().get(name, {"value": None, "reason": "not measured by the paper", "family": ""})


def reported_rows(data: dict) -> tuple[list[dict], dict[str, str]]:
    """The paper's rows on our scales, with the boards computed by the scorer's board registry
    (eval_backend/scoring/boards.py) from the paper's figures."""
    rows, fams = [], {}
    for r in data.get("rows", []):
        row = {"model": r["model"], "type": "reported", "source": REPORTED_SOURCE, "audio output": "—",
               "open weights": {"open": "yes", "close": "no", "closed": "no"}.get(str(r.get("type")), "—"),
               "organisation": "", "benchmark": "EchoMind (paper)"}
        metrics = _PaperMetrics()
        for key, (col, factor, fam) in PAPER_COLUMNS.items():
            v = r.get(key)
            row[col] = round(v * factor, 4) if _num(v) else NOT_MEASURED
            fams[col] = fam
            metrics[col] = ({"value": row[col], "family": fam} if _num(row[col]) else
                            {"value": None, "reason": "not measured by the paper", "family": fam})
        computed = boards(metrics)
        for b in BOARDS:
            e = computed[b]
            row[b] = round(e["value"], 4) if _num(e["value"]) else e["reason"]
            row[f"{b} 95% CI"] = "not reported by the paper"
        rows.append(row)
    return rows, fams


def build_table(docs: Mapping[str, dict], infos: Mapping[str, ModelInfo] | None = None,
                reported: dict | None = None) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The full table (every column) and {group: [metric columns]}. `docs`: model -> results document."""
    infos = infos or {}
    rows, fams = [], {}
    for model, doc in sorted(docs.items()):
        row, f = measured_row(doc, infos.get(model, ModelInfo()))
        rows.append(row)
        fams.update(f)
    if reported:
        rrows, f = reported_rows(reported)
        rows.extend(rrows)
        for k, v in f.items():
            fams.setdefault(k, v)
    groups: dict[str, list[str]] = {g: [] for g in GROUPS}
    for col, fam in sorted(fams.items()):
        groups.setdefault(FAMILIES.get(fam, "Other"), []).append(col)
    metric_cols = [c for g in groups.values() for c in g]
    ci_cols = list(BOARD_CI) + [f"{c} 95% CI" for c in metric_cols]
    columns = list(INFO_COLUMNS) + list(BOARDS) + metric_cols + ci_cols
    for r in rows:
        for c in metric_cols:
            if c not in r:
                r[c] = ("not computed: not scored for this model yet"
                        if r["source"] == MEASURED_SOURCE else NOT_MEASURED)
        for c in ci_cols:
            r.setdefault(c, "—")
    return pd.DataFrame(rows, columns=columns), groups


# ---------------------------------------------------------------- filtering and sorting
def _sort_key(series: pd.Series, higher_is_better: bool = True) -> pd.Series:
    nums = pd.to_numeric(series, errors="coerce")
    return -nums if higher_is_better else nums


def _ranks(df: pd.DataFrame, board: str) -> list:
    """Per row: 1 + the number of rows measured on the same benchmark with a strictly better value on
    `board`; "—" without a value; NOT_RANKED for the paper's rows (another benchmark)."""
    nums = pd.to_numeric(df[board], errors="coerce")
    measured = df["source"] == MEASURED_SOURCE
    out = []
    for i in df.index:
        if not measured[i]:
            out.append(NOT_RANKED)
        elif pd.isna(nums[i]):
            out.append("—")
        else:
            peers = measured & (df["benchmark"] == df.at[i, "benchmark"])
            out.append(1 + int((nums[peers] > nums[i]).sum()))
    return out


def apply_filters(df: pd.DataFrame, groups: Mapping[str, list[str]], state: FilterState) -> pd.DataFrame:
    """Rows that pass the filters, the chosen columns. Order: the rows measured here (per benchmark version,
    best first on the preset's board, not-computed last), then the paper's reported rows as a section of
    their own (sorted among themselves, never interleaved). `rank` counts only rows of the same benchmark;
    every board shows its interval column."""
    out = df
    if state.search.strip():
        terms = [t.lower() for t in state.search.split(";") if t.strip()]
        hay = (out["model"].astype(str) + " " + out["organisation"].astype(str)).str.lower()
        mask = pd.Series(False, index=out.index)
        for t in terms:
            mask |= hay.str.contains(t.strip(), regex=False)
        out = out[mask]
    kinds = set(state.kinds)
    out = out[out["type"].isin(kinds) | (("endpoint" in kinds) & (out["type"] == "unknown"))]
    if state.audio in ("yes", "no"):
        out = out[out["audio output"] == state.audio]
    if state.open_weights in ("yes", "no"):
        out = out[out["open weights"] == state.open_weights]
    board = SORT_PRESETS.get(state.sort, "LB1")
    if len(out):
        section = (out["source"] != MEASURED_SOURCE).astype(int)     # 0: measured here, 1: the paper's rows
        out = out.assign(_s=section, _k=_sort_key(out[board])).sort_values(
            ["_s", "benchmark", "_k", "model"], na_position="last", kind="stable").drop(columns=["_s", "_k"])
        out = out.assign(**{RANK: _ranks(out, board)})
    else:
        out = out.assign(**{RANK: []})
    cols = [RANK] + (list(INFO_COLUMNS) if state.all_columns else list(HEADLINE_INFO))
    for b in BOARDS:
        cols += [b, f"{b} 95% CI"]
    chosen = list(groups) if state.all_columns else list(state.groups)
    for g in chosen:
        for c in groups.get(g, []):
            cols.append(c)
            if (state.intervals or state.all_columns) and f"{c} 95% CI" in out.columns:
                cols.append(f"{c} 95% CI")
    return out[cols].reset_index(drop=True)


def sections(view: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows measured here, the paper's reported rows) of an `apply_filters` view, each in its own order."""
    reported = view["source"] == REPORTED_SOURCE
    return view[~reported].reset_index(drop=True), view[reported].reset_index(drop=True)


# ---------------------------------------------------------------- what the page shows
# Headers are human names (eval_backend/scoring/labels.py, boards.py); ids stay in the data, the CSV and the
# headers' tooltips. A cell that is not a number shows "—", with its reason as a numbered note under the
# table ("— [2]"), so no cell holds a sentence and no column grows past its header.
INFO_LABELS = {RANK: "Rank", "model": "Model", "type": "Type", "source": "Source", "audio output": "Audio out",
               "open weights": "Open weights", "organisation": "Organisation", "benchmark": "Benchmark"}
BOARD_SHORT = {b.key: b.name for b in tabled_boards()}
MAX_CELL = 60
NO_RESULTS = "no model matches these filters"
DASH = "—"
HIDDEN = ("source",)
REASON_STARTS = ("not computed", "no interval", "not reported", "not measured")                   # the page splits the sections by it; the CSV keeps it


def column_label(col: str) -> str:
    """A column's header on the page: boards by their registry label, metrics by their name, intervals after
    the board's short name or the metric's name."""
    if col in INFO_LABELS:
        return INFO_LABELS[col]
    if col in BOARD_LABELS:
        return BOARD_LABELS[col]
    if col.endswith(CI_SUFFIX):
        base = col[: -len(CI_SUFFIX)]
        return (BOARD_SHORT.get(base) or metric_label(base)) + CI_SUFFIX
    return metric_label(col)


def header_ids() -> dict[str, str]:
    """Header -> internal id, for every board, metric and interval column the registries know: the page puts
    the id in the header's tooltip and the legend."""
    ids = {}
    for col in [*BOARDS, *METRIC_LABELS]:
        for c in (col, f"{col}{CI_SUFFIX}"):
            ids[column_label(c)] = c
    return ids


# operator words -> what a visitor reads (the notes under the table)
_PUBLIC = ((re.compile(r"^error: .*", re.S), "scoring failed for this metric"),
           (re.compile(r"configured at \S+ but"), "configured but"),
           (re.compile(r"\bnot registered\b"), "not available on this Space"),
           (re.compile(r"\(metric added later: rescore\)"), "yet"),
           (re.compile(r";?\s*rescore$"), ""))
_PART = re.compile(r"^(?P<id>[a-z0-9]+\.[\w.]+) (?:not computed: )?(?P<why>.+)$", re.S)
MAX_NOTE = 160


def public_reason(reason: str) -> str:
    """A cell's reason as a short note for the public: no repeated "not computed:", metric names instead of
    ids, one clause per distinct reason ("no judge configured", not once per metric)."""
    parts = [p.strip(" .") for p in re.split(r";\s*", re.sub(r"^not computed:\s*", "", str(reason or "").strip()))]
    whys: list[tuple[str, str]] = []
    for part in filter(None, parts):
        m = _PART.match(part)
        name, why = (m.group("id"), m.group("why")) if m else ("", part)
        why = re.sub(r"^not computed:\s*", "", why)
        for pat, repl in _PUBLIC:
            why = pat.sub(repl, why)
        whys.append((name, why.strip()))
    distinct = list(dict.fromkeys(w for _, w in whys))
    if len(distinct) == 1:
        text = distinct[0]
    else:
        text = "; ".join(f"{metric_label(n)}: {w}" if n else w for n, w in dict.fromkeys(whys))
    text = with_labels(text) or "not computed"
    return text if len(text) <= MAX_NOTE else text[: MAX_NOTE - 1].rstrip() + "…"


@dataclass
class Notes:
    """The numbered reasons of one page (both sections share the numbering)."""
    numbers: dict[str, int] = field(default_factory=dict)

    def mark(self, reason: str) -> str:
        n = self.numbers.setdefault(public_reason(reason), len(self.numbers) + 1)
        return f"{DASH} [{n}]"

    def markdown(self) -> str:
        if not self.numbers:
            return ""
        return "**Notes** (why a cell shows —)\n\n" + "\n".join(
            f"[{n}] {text.replace('*', '∗').replace('_', ' ')}  " for text, n in self.numbers.items())


def short_cell(value, notes: Notes) -> str:
    """A number with 3 decimals, a short text as is, "—" for a missing value, and "— [n]" for a reason."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)                   # a rank
    if _num(value):
        return f"{value:.3f}"
    text = "" if value is None else str(value).strip()
    if not text.startswith(REASON_STARTS) and len(text) <= MAX_CELL:
        return text or DASH
    return notes.mark(text)


def readable(view: pd.DataFrame, notes: Notes, empty: str = NO_RESULTS, hidden: tuple[str, ...] = HIDDEN) -> pd.DataFrame:
    """An `apply_filters` view as the page shows it: human headers, short cells, and one explicit row saying
    so when nothing matches (a bare header row reads like a broken page). `hidden`: columns left out (the
    paper's section keeps `source`, "reported, not reproduced here", on every row)."""
    cols = [c for c in view.columns if c not in hidden]
    if not len(view):
        row = {c: "" for c in cols}
        row["model" if "model" in cols else cols[0]] = empty
        view = pd.DataFrame([row], columns=cols)
    out = pd.DataFrame({column_label(c): [short_cell(v, notes) if c != "model" else _short_name(v)
                                          for v in view[c]] for c in cols}, columns=[column_label(c) for c in cols])
    return out


def _short_name(name) -> str:
    name = "" if name is None else str(name)
    return name if len(name) <= MAX_CELL else name[: MAX_CELL - 1] + "…"


def display_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Numbers as text with 3 decimals (mixed number / reason columns render alike in the browser)."""
    return df.map(lambda v: f"{v:.3f}" if _num(v) else ("" if v is None else str(v)))


# ---------------------------------------------------------------- shareable URL
def state_to_query(state: FilterState) -> dict[str, str]:
    """Only what differs from the defaults, so the URL stays short."""
    d, q = FilterState(), {}
    if state.search != d.search:
        q["q"] = state.search
    if tuple(state.kinds) != d.kinds:
        q["kinds"] = ",".join(state.kinds) or "none"
    if state.audio != d.audio:
        q["audio"] = state.audio
    if state.open_weights != d.open_weights:
        q["open"] = state.open_weights
    if tuple(state.groups) != d.groups:
        q["groups"] = ",".join(str(GROUPS.index(g)) for g in state.groups if g in GROUPS) or "none"
    if state.sort != d.sort:
        q["sort"] = state.sort
    if state.intervals:
        q["ci"] = "1"
    if state.all_columns:
        q["all"] = "1"
    return q


def state_from_query(params: Mapping[str, str]) -> FilterState:
    """Query parameters → a state; unknown or malformed values fall back to the default of that field."""
    d = FilterState()
    kw: dict = {}
    if "q" in params:
        kw["search"] = str(params["q"])[:200]
    if "kinds" in params:
        kinds = tuple(k for k in str(params["kinds"]).split(",") if k in KINDS)
        kw["kinds"] = kinds if kinds or params["kinds"] == "none" else d.kinds
    if params.get("audio") in ("any", "yes", "no"):
        kw["audio"] = params["audio"]
    if params.get("open") in ("any", "yes", "no"):
        kw["open_weights"] = params["open"]
    if "groups" in params:
        idx = [int(i) for i in str(params["groups"]).split(",") if i.isdigit() and int(i) < len(GROUPS)]
        kw["groups"] = tuple(GROUPS[i] for i in idx) if idx or params["groups"] == "none" else d.groups
    if params.get("sort") in SORT_PRESETS:
        kw["sort"] = params["sort"]
    if "ci" in params:
        kw["intervals"] = params["ci"] in ("1", "true", "yes")
    if "all" in params:
        kw["all_columns"] = params["all"] in ("1", "true", "yes")
    return replace(d, **kw)
