"""factprobe from Python: the same work as the command line, called as functions::

    import factprobe
    run = factprobe.evaluate("zp-lke", "data/datasets/sample-mc", "data/models/planted",
                             out="runs/zp-lke", examples=10, limit=20)
    run.metrics["accuracy_at_k"]["0.0"]["value"], len(run.outputs)

Four calls and one class (docs/library.md):

- :func:`evaluate` runs ``factprobe eval METHOD`` and returns its :class:`Run`;
- :func:`load_run` reads a run folder that ``factprobe eval`` or :func:`evaluate` wrote;
- :func:`build` runs ``factprobe build KIND`` and returns the dataset folder;
- :func:`report` runs ``factprobe report`` and returns the report folder.

Options are the command's flags, named as Python names (``--batch-size`` is ``batch_size``,
``--no-subject-blind`` is ``subject_blind=False``); a flag without a value takes True or
False, a list stands for a comma-separated or repeated value. They are parsed by the very
parser of the command, so their defaults, checks and error messages are the command's (a
:class:`~factprobe.core.errors.UserError` whose text is the line the command would print), and
a call writes the bytes the command writes with the same flags.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factprobe.core.errors import UserError

__all__ = ["Run", "build", "evaluate", "load_run", "report"]


@dataclass
class Run:
    """A run folder (``factprobe eval``'s ``--out``): its files, read when first asked for."""

    folder: Path
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def _json(self, name: str) -> dict:
        if name not in self._cache:
            self._cache[name] = json.loads((self.folder / name).read_text(encoding="utf-8"))
        return self._cache[name]

    @property
    def run(self) -> dict:
        """run.json: the method and its config, the model, the dataset, versions, timings."""
        return self._json("run.json")

    @property
    def metrics(self) -> dict:
        """metrics.json: the method's metrics (docs/metrics/)."""
        return self._json("metrics.json")

    @property
    def method(self) -> str:
        return self.run["method"]

    @property
    def outputs(self):
        """outputs.parquet as a pandas DataFrame (one row per model answer, docs/schema.md);
        pandas is imported on first use."""
        if "outputs" not in self._cache:
            import pandas as pd
            self._cache["outputs"] = pd.read_parquet(self.folder / "outputs.parquet")
        return self._cache["outputs"]

    @property
    def prompts(self):
        """prompts.parquet as a DataFrame: every prompt's text by its ``prompt_id``."""
        if "prompts" not in self._cache:
            import pandas as pd
            self._cache["prompts"] = pd.read_parquet(self.folder / "prompts.parquet")
        return self._cache["prompts"]


def load_run(folder: str | Path) -> Run:
    """The run in ``folder``; a UserError when it is not one (no run.json, or unreadable)."""
    path = Path(folder)
    missing = [n for n in ("run.json", "metrics.json", "outputs.parquet")
               if not (path / n).is_file()]
    if missing:
        raise UserError(f"{folder}: not a run folder (it lacks {', '.join(missing)}, which "
                        f"'factprobe eval' writes)")
    run = Run(path)
    try:
        run.run, run.metrics
    except ValueError as exc:
        raise UserError(f"{folder}: run.json or metrics.json is not JSON ({exc})") from None
    return run


def evaluate(method: str, dataset: str | Path, model: str | Path, *, out: str | Path,
             backend: str | None = None, **options: Any) -> Run | None:
    """``factprobe eval METHOD --dataset DATASET --model MODEL --out OUT [--backend BACKEND]``
    with ``options`` as its other flags; the run, or None after ``dry_run=True``."""
    from factprobe.cli import evaluate as command
    from factprobe.evaluation import run_evaluation
    given = {"dataset": dataset, "model": model, "out": out, "backend": backend, **options}
    args = _parse(command.register, ["eval", method], given)
    # as the command line does; too late, and so a no-op, where this process imported torch
    # already (what ran is in run.json's "kernels")
    from factprobe.core.kernels import pin
    pin(args.kernels)
    from factprobe.cli.outputs import guarded_outputs
    with guarded_outputs(args):
        done = run_evaluation(method, args)
    return None if done.out is None else Run(Path(done.out))


def build(kind: str, *, out: str | Path, **options: Any) -> Path:
    """``factprobe build KIND --out OUT`` with ``options`` as its other flags (``factprobe
    build KIND --help`` lists them); the dataset folder."""
    from factprobe.cli import build as command
    args = _parse(command.register, ["build", kind], {"out": out, **options})
    _run(args)
    return Path(args.out)


def report(results, out: str | Path, **options: Any) -> Path:
    """``factprobe report --results ... --out OUT`` over ``results`` (run folders, folders
    holding runs, or :class:`Run` objects), ``options`` as its other flags; the report
    folder."""
    from factprobe.cli import report as command
    if isinstance(results, (str, Path, Run)):
        results = [results]
    folders = [r.folder if isinstance(r, Run) else r for r in results]
    args = _parse(command.register, ["report"], {"results": folders, "out": out, **options})
    _run(args)
    return Path(args.out)


def _run(args) -> str:
    from factprobe.cli.outputs import guarded_outputs
    with guarded_outputs(args):
        return args.run(args)


class _Refusing(argparse.ArgumentParser):
    """The command's parser, with a UserError where the command prints its error line."""

    def error(self, message: str):
        raise UserError(message)


def _parse(register, words: list[str], options: dict) -> argparse.Namespace:
    from factprobe.cli.common import common_flags
    parser = _Refusing(prog="factprobe")
    register(parser.add_subparsers(dest="command", required=True), common_flags())
    leaf = parser
    for word in words:
        [sub] = [a for a in leaf._actions if isinstance(a, argparse._SubParsersAction)]
        if word not in sub.choices:
            raise UserError(f"{' '.join(words[:-1]) or 'factprobe'}: {word!r} is not one of "
                            f"{', '.join(sub.choices)}")
        leaf = sub.choices[word]
    return parser.parse_args(words + _argv(leaf, options, " ".join(words)))


def _argv(leaf: argparse.ArgumentParser, options: dict, command: str) -> list[str]:
    """``options`` (flag names as Python names) as the command line's words."""
    flags = {a.dest: a for a in leaf._actions
             if a.option_strings and a.dest not in ("help", "version")}
    argv: list[str] = []
    for key, value in options.items():
        if value is None:
            continue                            # None: the flag's default, as if not given
        action = flags.get(key)
        if action is None:
            raise UserError(f"factprobe {command}: no option {key!r}; its options: "
                            f"{', '.join(sorted(flags))}")
        long = next(s for s in action.option_strings if s.startswith("--"))
        if action.nargs == 0:
            argv.extend(_switch(action, long, key, value))
        elif action.nargs in ("+", "*"):
            items = value if isinstance(value, (list, tuple)) else [value]
            argv.extend([long, *(_text(v) for v in items)])
        else:
            argv.append(f"{long}={_text(value)}")   # '=': a value may begin with '-'
    return argv


def _switch(action: argparse.Action, long: str, key: str, value) -> list[str]:
    """A flag without a value: True or False."""
    if not isinstance(value, bool):
        raise UserError(f"{key}={value!r}: give True or False (it is the flag {long})")
    if isinstance(action, argparse.BooleanOptionalAction):
        return [action.option_strings[0] if value else action.option_strings[1]]
    if isinstance(action, argparse._StoreFalseAction):     # --no-X: X=False gives the flag
        return [] if value else [long]
    return [long] if value else []


def _text(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return str(value)
