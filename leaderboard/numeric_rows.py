"""The benchmark board's rows for machines (the CSV download, the named API `/benchmark_board`): every number
column holds a number or is empty, and the text a cell showed instead goes to a `notes` column."""
from __future__ import annotations

import re

import pandas as pd

from eval_backend.numbers import is_number
from eval_backend.scoring.labels import CI_SUFFIX

from .results_table import INFO_COLUMNS, RANK

NOTE_COLUMN = "notes"
_CI = re.compile(r"^\[(-?[0-9.]+(?:e-?[0-9]+)?), (-?[0-9.]+(?:e-?[0-9]+)?)\]$")


def numeric_view(view: pd.DataFrame) -> pd.DataFrame:
    """An `apply_filters` view for machines (the CSV, the named API): every column other than the info columns
    holds a number or is empty, each "X 95% CI" becomes "X 95% low" / "X 95% high", and whatever text a number
    cell held ("not computed: …", "not ranked", "—") goes to the row's `notes` column as "column: text"."""
    out_rows = []
    for _, row in view.iterrows():
        out, notes = {}, []
        for col, value in row.items():
            if col in INFO_COLUMNS:
                out[col] = value
            elif col.endswith(CI_SUFFIX):
                base = col[: -len(CI_SUFFIX)]
                m = _CI.match(str(value).strip())
                out[f"{base} 95% low"] = float(m.group(1)) if m else None
                out[f"{base} 95% high"] = float(m.group(2)) if m else None
                if not m and str(value).strip() not in ("", "—"):
                    notes.append(f"{col}: {value}")
            elif is_number(value) and not isinstance(value, bool):
                out[col] = float(value) if col != RANK else int(value)
            else:
                out[col] = None
                if str(value).strip() not in ("", "—"):
                    notes.append(f"{col}: {value}")
        out[NOTE_COLUMN] = "; ".join(notes)
        out_rows.append(out)
    columns = [c for c in (out_rows[0] if out_rows else {})] or [NOTE_COLUMN]
    return pd.DataFrame(out_rows, columns=columns)
