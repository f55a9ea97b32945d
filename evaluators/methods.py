"""The probing methods ``factprobe eval`` knows: how each reads its dataset, plans its
requests and turns outputs into metrics. An explicit table, not a registry filled by imports."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from builders.core.errors import UserError
from builders.core.tables import read_table
from evaluators.metrics.suite import (  # noqa: F401
    belief_icl_metrics,
    belief_metrics,
    monitor_metrics,
    prompt_metrics,
    zp_lke_metrics,
)
from evaluators.metrics.validity import planted_split, validity  # noqa: F401


@dataclass(frozen=True)
class Method:
    name: str
    tables: tuple[str, ...]          # tables the dataset must have
    masked: bool                     # needs a masked LM
    plan: Callable                   # (tables: dict[str, DataFrame], config) -> Plan
    metrics: Callable                # (outputs, planted | None, config) -> dict


def load_tables(folder: Path, names: tuple[str, ...], method: str) -> dict[str, pd.DataFrame]:
    missing = [n for n in names if not (folder / f"{n}.parquet").is_file()]
    if missing:
        raise UserError(f"{folder} lacks {', '.join(m + '.parquet' for m in missing)}, which "
                        f"{method} needs; build the right dataset first (see docs/methods)")
    return {n: read_table(folder, n).to_pandas() for n in names}


def _zp_lke_plan(tables: dict, cfg):
    from probes.methods.zp_lke import plan
    return plan(tables["facts"], cfg)


METHODS: dict[str, Method] = {
    "zp-lke": Method("zp-lke", ("facts",), False, _zp_lke_plan, zp_lke_metrics),
}


def _prompt_plan(tables: dict, cfg):
    from probes.methods.prompt import plan
    from probes.methods.templates_in import load_templates
    return plan(tables["facts"], load_templates(cfg.templates), cfg)


def _multiprompt_templates(tables: dict):
    from builders.templates.files import Template
    fields = [f for f in Template.__dataclass_fields__]
    return [Template(**{k: r[k] for k in fields}) for r in tables["templates"].to_dict("records")]


def _belief_plan(tables: dict, cfg):
    from probes.methods.belief import plan
    return plan(tables["facts"], _multiprompt_templates(tables), cfg)


def _belief_icl_plan(tables: dict, cfg):
    from probes.methods.belief_icl import plan
    return plan(tables["facts"], _multiprompt_templates(tables), cfg)


def _monitor_plan(tables: dict, cfg):
    from builders.templates.files import Template
    from probes.methods.monitor import plan
    fields = list(Template.__dataclass_fields__)
    templates = []
    for r in tables["templates"].to_dict("records"):
        t = Template(**{k: r[k] for k in fields})
        templates.append(_Based(t, bool(r.get("is_base", False))))
    return plan(tables["facts"], templates, cfg)


class _Based:
    """A template with FKTC's ``is_base`` flag (the base question of its relation)."""

    def __init__(self, template, is_base: bool):
        self._t, self.is_base = template, is_base

    def __getattr__(self, name):
        return getattr(self._t, name)


METHODS.update({
    "prompt": Method("prompt", ("facts",), False, _prompt_plan, prompt_metrics),
    "belief": Method("belief", ("facts", "templates"), True, _belief_plan, belief_metrics),
    "belief-icl": Method("belief-icl", ("facts", "templates"), False, _belief_icl_plan,
                         belief_icl_metrics),
    "monitor": Method("monitor", ("facts", "templates"), False, _monitor_plan, monitor_metrics),
})
