"""The report's ``headline.json``: a handful of flat scalars for ``dvc metrics show`` and
``dvc exp show`` (each method's main number per run and setting, and its validity AUROC on a
planted model). The full numbers stay in ``metrics.json`` and the tables; DVC shows every key
of a metrics file as a column, so this one stays small on purpose."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

# Besides each method's main metric: how well its estimate separates planted from held-out facts.
EXTRA = ("validity_auroc",)


def headline(board: pd.DataFrame, main: Mapping[str, str]) -> dict[str, float]:
    """``{"<method>/<model>[ (<setting>)]/<metric>": value}`` from a leaderboard, for each
    method's ``main`` metric and :data:`EXTRA`; the dataset is prefixed only where two datasets
    would give one key.

    >>> board = pd.DataFrame([
    ...     {"dataset": "d", "method": "zp-lke", "model": "m", "setting": "",
    ...      "metric": "mc_accuracy", "value": 0.5},
    ...     {"dataset": "d", "method": "zp-lke", "model": "m", "setting": "",
    ...      "metric": "probability_mass", "value": 0.4},
    ...     {"dataset": "e", "method": "belief-icl", "model": "m", "setting": "zero",
    ...      "metric": "acc1", "value": None}])
    >>> headline(board, {"zp-lke": "mc_accuracy", "belief-icl": "acc1"})
    {'zp-lke/m/mc_accuracy': 0.5}
    """
    rows = []
    for x in board.itertuples(index=False):
        if x.metric != main.get(x.method) and x.metric not in EXTRA:
            continue
        if x.value is None or pd.isna(x.value):
            continue
        name = f"{x.model} ({x.setting})" if x.setting else x.model
        rows.append((x.dataset, f"{x.method}/{name}/{x.metric}", float(x.value)))
    datasets: dict[str, set[str]] = {}
    for ds, key, _ in rows:
        datasets.setdefault(key, set()).add(ds)
    out = {}
    for ds, key, value in rows:
        out[f"{ds}/{key}" if len(datasets[key]) > 1 else key] = value
    return dict(sorted(out.items()))
