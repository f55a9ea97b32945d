"""Model results -> rows of the outputs table (one row per continuation, sample or mask), and
the typed table ``outputs.parquet`` holds (columns: docs/schema.md)."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from factprobe.probes.requests import prompt_id

# Columns that are integers where a row has them and null where it does not (a generation has
# no option, a greedy answer no sample number). Rows of several stages put together would
# make them floats in pandas (NaN for "none"); the file keeps them integers. These are the
# engine's own; a method's integer meta columns are declared by its plan
# (:attr:`factprobe.probes.plan.Plan.integer_columns`).
ENGINE_INTEGER_COLUMNS = ("option", "sample", "n_tokens")


def typed_frame(frame: pd.DataFrame, integer_columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """``frame`` with its integer columns (the engine's and ``integer_columns``, the plan's)
    as pandas' nullable ``Int64`` and a greedy row's ``sample`` null (checkpoints of older
    versions wrote -1)."""
    frame = frame.copy()
    for name in dict.fromkeys((*integer_columns, *ENGINE_INTEGER_COLUMNS)):
        if name in frame.columns:
            col = pd.to_numeric(frame[name])
            if name == "sample":
                col = col.where(col >= 0)
            frame[name] = col.astype("Int64")   # raises on a non-integer value: never rounded
    return frame


def outputs_table(frame: pd.DataFrame, integer_columns: tuple[str, ...] = ()) -> pa.Table:
    """The outputs as written to ``outputs.parquet``: :func:`typed_frame`, without pandas
    metadata, so that every reader (pyarrow, datasets, DuckDB, pandas) sees the same types.

    >>> f = pd.DataFrame({"stage": ["mc", "mc", "greedy"], "option": [0.0, 1.0, float("nan")],
    ...                   "sample": [float("nan"), float("nan"), -1.0]})
    >>> t = outputs_table(f)
    >>> str(t.schema.field("option").type), t["option"].to_pylist(), t["sample"].null_count
    ('int64', [0, 1, None], 3)
    """
    return pa.Table.from_pandas(typed_frame(frame, integer_columns), preserve_index=False
                                ).replace_schema_metadata(None)


def score_rows(stage: str, requests, results) -> list[dict]:
    rows = []
    for req, scored in zip(requests, results):
        pid = prompt_id(req.context)
        for k, s in enumerate(scored):
            om = req.option_meta[k] if k < len(req.option_meta) else {"option": k}
            rows.append({**req.meta, "prompt_id": pid, "stage": stage, "kind": "score", **om,
                         "token_logprobs": s.token_logprobs, "logprob": s.logprob,
                         "n_tokens": len(s.token_ids)})
    return rows


def generate_rows(stage: str, requests, results) -> list[dict]:
    rows = []
    for req, gens in zip(requests, results):
        pid = prompt_id(req.prompt)
        for s, g in enumerate(gens):
            row = {**req.meta, "prompt_id": pid, "stage": stage, "kind": "generate",
                   "sample": s if req.samples else None, "text": g.text,
                   "token_ids": g.token_ids, "token_logprobs": g.token_logprobs,
                   "logprob": float(sum(g.token_logprobs)), "n_tokens": len(g.token_ids)}
            if req.watch:
                row["watched_logprobs"] = g.watched_logprobs
            rows.append(row)
    return rows


def mask_rows(stage: str, requests, results) -> list[dict]:
    rows = []
    for req, m in zip(requests, results):
        row = {**req.meta, "prompt_id": prompt_id(req.prompt), "stage": stage,
               "kind": "fill_mask"}
        if req.mask_each_from is None:
            row |= {"top_tokens": m.top_tokens, "top_probs": m.top_probs,
                    "candidate_probs": m.candidate_probs,
                    "candidate_tokens": m.candidate_tokens}
        else:   # a pseudo-log-likelihood: the columns of a scored continuation
            row |= {"token_logprobs": m.token_logprobs,
                    "logprob": float(sum(m.token_logprobs)), "n_tokens": len(m.token_ids)}
        rows.append(row)
    return rows


def request_text(req) -> str:
    return getattr(req, "context", None) if hasattr(req, "context") else req.prompt
