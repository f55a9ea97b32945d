"""The probing methods ``factprobe eval`` and ``factprobe report`` know: an explicit table, one
line per method, pairing the probe (``probes/methods/<method>.py``: config, tables, flags,
plan, citation, model kind) with its metrics (``evaluators/metrics/suites/<method>.py``:
metrics.json, headlines, report family, validity blocks, figures). Everything else reads this
table; adding a method is its two modules and one line here (docs/extending.md)."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from factprobe.core.errors import UserError
from factprobe.probes.methods import belief, belief_icl, monitor, prompt, zp_lke
from factprobe.probes.methods.spec import Probe

if TYPE_CHECKING:  # the CLI's parser reads this table: pandas and pyarrow load only to run
    import pandas as pd

    from factprobe.evaluators.metrics.suite import MethodMetrics


@dataclass(frozen=True)
class Method:
    probe: Probe
    # the metric set, or the name of its module in evaluators/metrics/suites/, imported on first
    # use: `factprobe`'s parser reads this table, and the metric modules import pandas and numpy
    suite: MethodMetrics | str

    def __post_init__(self):
        if not isinstance(self.suite, str):
            self._paired(self.suite)

    @property
    def metrics(self) -> MethodMetrics:
        if isinstance(self.suite, str):
            suite = import_module(f"factprobe.evaluators.metrics.suites.{self.suite}").METRICS
            return self._paired(suite)
        return self.suite

    def _paired(self, metrics: MethodMetrics) -> MethodMetrics:
        if self.probe.name != metrics.name:
            raise ValueError(f"probe {self.probe.name!r} paired with the metrics of "
                             f"{metrics.name!r}")
        return metrics

    @property
    def name(self) -> str:
        return self.probe.name


METHODS: dict[str, Method] = {
    "zp-lke": Method(zp_lke.PROBE, "zp_lke"),
    "prompt": Method(prompt.PROBE, "prompt"),
    "belief": Method(belief.PROBE, "belief"),
    "belief-icl": Method(belief_icl.PROBE, "belief_icl"),
    "monitor": Method(monitor.PROBE, "monitor"),
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
