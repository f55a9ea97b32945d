"""The probing methods ``factprobe eval`` and ``factprobe report`` know: an explicit table, one
line per method, pairing the probe (``probes/methods/<method>.py``: config, tables, flags,
plan, citation, model kind) with its metrics (``evaluators/metrics/suites/<method>.py``:
metrics.json, headlines, report family, validity blocks, figures). Everything else reads this
table; adding a method is its two modules and one line here (docs/extending.md)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics.suite import MethodMetrics
from factprobe.evaluators.metrics.suites import belief as belief_metrics
from factprobe.evaluators.metrics.suites import belief_icl as belief_icl_metrics
from factprobe.evaluators.metrics.suites import monitor as monitor_metrics
from factprobe.evaluators.metrics.suites import prompt as prompt_metrics
from factprobe.evaluators.metrics.suites import zp_lke as zp_lke_metrics
from factprobe.probes.methods import belief, belief_icl, monitor, prompt, zp_lke
from factprobe.probes.methods.spec import Probe

if TYPE_CHECKING:  # the CLI's parser reads this table: pandas and pyarrow load only to run
    import pandas as pd


@dataclass(frozen=True)
class Method:
    probe: Probe
    metrics: MethodMetrics

    def __post_init__(self):
        if self.probe.name != self.metrics.name:
            raise ValueError(f"probe {self.probe.name!r} paired with the metrics of "
                             f"{self.metrics.name!r}")

    @property
    def name(self) -> str:
        return self.probe.name


METHODS: dict[str, Method] = {
    "zp-lke": Method(zp_lke.PROBE, zp_lke_metrics.METRICS),
    "prompt": Method(prompt.PROBE, prompt_metrics.METRICS),
    "belief": Method(belief.PROBE, belief_metrics.METRICS),
    "belief-icl": Method(belief_icl.PROBE, belief_icl_metrics.METRICS),
    "monitor": Method(monitor.PROBE, monitor_metrics.METRICS),
}


def method(name: str, where: str) -> Method:
    """The method a run.json names; a user error for one factprobe does not know."""
    if name not in METHODS:
        raise UserError(f"{where}: method {name!r} is not one factprobe knows "
                        f"({', '.join(METHODS)})")
    return METHODS[name]


def load_tables(folder: Path, names: tuple[str, ...], method: str) -> dict[str, pd.DataFrame]:
    missing = [n for n in names if not (folder / f"{n}.parquet").is_file()]
    if missing:
        raise UserError(f"{folder} lacks {', '.join(m + '.parquet' for m in missing)}, which "
                        f"{method} needs; build the right dataset first (see docs/methods)")
    from factprobe.core.tables import read_table
    return {n: read_table(folder, n).to_pandas() for n in names}
