"""The methods' stages of the DVC pipelines, written from the table of methods
(:data:`factprobe.evaluators.methods.METHODS`, each probe's :class:`Pipeline`): the ``eval-*``
stages and ``eval.<method>`` params of the shipped ``dvc.yaml`` / ``params.yaml``, and those of
``factprobe init``'s templates (:mod:`factprobe.scaffold.render` fills its holes from here).

A new method with a ``pipeline`` gets its stage in both by running
``python -m factprobe.scaffold.stages`` (``--check``: exit 1 when the files differ from the
table); tests/test_stages.py checks that the shipped files are what this module writes.
"""
from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

# What every shipped eval stage depends on besides its dataset and model: the code that
# writes outputs.parquet and metrics.json (tests/test_dvc_deps.py checks it against imports).
SHIPPED_DEPS = ("factprobe/core", "builders/inputs.py", "builders/open.py",
                "builders/publish/layout.py", "builders/templates/files.py", "probes",
                "evaluators/methods.py", "evaluators/metrics", "factprobe/cli/evaluate.py",
                "factprobe/evaluation.py", "factprobe/cli/scale_flags.py",
                "factprobe/cli/threads.py", "factprobe/cli/results_table.py")
OUTS = ("outputs.parquet", "prompts.parquet", "run.json")
WIDTH = 98        # init's command lines, at most this long (DVC folds them back into one)


def _methods(methods=None) -> list:
    if methods is None:
        from factprobe.evaluators.methods import METHODS
        methods = METHODS
    return [m for m in methods.values() if m.probe.pipeline is not None]


def key(name: str) -> str:
    """A method's section of params.yaml: its name as a YAML/DVC-friendly key.

    >>> key("belief-icl")
    'belief_icl'
    """
    return name.replace("-", "_")


def _models(m) -> str:
    return "eval.masked_models" if m.probe.backend == "hf-masked" else "eval.models"


def _shipped_order(methods) -> list:
    # the shipped files list the decoder-model methods first, then the masked-LM ones
    return sorted(_methods(methods), key=lambda m: m.probe.backend == "hf-masked")


def shipped_stages(methods=None) -> str:
    """The shipped dvc.yaml's eval stages."""
    out = []
    for m in _shipped_order(methods):
        n, k = m.name, key(m.name)
        res = f"data/results/${{eval.{k}.dataset}}/{n}/${{key}}"
        out += [f"  eval-{n}:", f"    foreach: ${{{_models(m)}}}", "    do:", "      cmd: >-",
                f"        factprobe eval {n} --quiet --dataset data/datasets/${{eval.{k}.dataset}}",
                f"        --model ${{item}} ${{eval.{k}.args}}", f"        --out {res}",
                "      deps:", f"        - data/datasets/${{eval.{k}.dataset}}", "        - ${item}"]
        out += [f"        - {d}" for d in SHIPPED_DEPS]
        out += ["      params:", f"        - eval.{k}", "      outs:"]
        out += [f"        - {res}/{o}" for o in OUTS]
        out += [f"        - {res}/metrics.json:", "            cache: false", ""]
    return "\n".join(out) + "\n"


def shipped_params(methods=None) -> str:
    """The shipped params.yaml's eval.<method> sections (the sample datasets)."""
    out = []
    for m in _shipped_order(methods):
        p = m.probe.pipeline
        if p.note:
            out.append(f"  # {p.note}")
        out.append(f'  {key(m.name)}: {{dataset: sample-{p.dataset}, args: "{p.args}"}}')
    return "\n".join(out) + "\n"


def init_stages(methods=None) -> str:
    """factprobe init's eval stages (dvc.yaml.in's {{eval_stages}})."""
    out = []
    for m in _methods(methods):
        n, k, p = m.name, key(m.name), m.probe.pipeline
        ds = f"data/datasets/${{name}}-{p.dataset}"
        res = f"data/results/${{name}}-{p.dataset}/{n}/${{key}}"
        words = [f"factprobe eval {n} --quiet --dataset {ds} --model='${{item}}'"]
        cmd = " ".join(x for x in (words[0], p.flags, f"--out='{res}'", f"${{eval.{k}.args}}")
                       if x)
        wrapped = textwrap.wrap(cmd, WIDTH - 8, break_long_words=False, break_on_hyphens=False)
        out += [f"  eval-{n}:", f"    foreach: ${{{_models(m)}}}", "    do:", "      cmd: >-"]
        out += [f"        {line}" for line in wrapped]
        out += ["      deps:", f"        - {ds}"] + [f"        - {d}" for d in p.deps]
        out += ["        - ${item}", "      params:", f"        - eval.{k}"]
        out += [f"        - {x}" for x in p.params] + ["      outs:", f"        - {res}", ""]
    return "\n".join(out)


def init_params(methods=None) -> str:
    """factprobe init's eval.<method> sections (params.yaml.in's {{eval_params}}); their own
    {{holes}} are init's sizes."""
    return "\n".join(f'  {key(m.name)}: {{args: "{m.probe.pipeline.init_args}"}}'
                     for m in _methods(methods))


# ---------------------------------------------------------------------------- shipped files

_STAGE = re.compile(r"^  [^ #]")


def _region(lines: list[str], start, stop) -> tuple[int, int]:
    i = next(n for n, line in enumerate(lines) if start(line))
    j = next((n for n in range(i + 1, len(lines)) if stop(lines[n])), len(lines))
    return i, j


def with_stages(dvc_yaml: str, methods=None) -> str:
    """dvc.yaml with its eval stages (from the first ``eval-`` stage to the next other stage
    or comment at stage level) replaced by :func:`shipped_stages`."""
    lines = dvc_yaml.splitlines(keepends=True)
    i, j = _region(lines, lambda s: s.startswith("  eval-"),
                   lambda s: s.startswith("  ") and not s.startswith(("  eval-", "   "))
                   and s.strip() != "")
    return "".join(lines[:i]) + shipped_stages(methods) + "".join(lines[j:])


def with_params(params_yaml: str, methods=None) -> str:
    """params.yaml with its eval.<method> lines (the first ``  x: {dataset:`` line to the next
    blank line) replaced by :func:`shipped_params`."""
    lines = params_yaml.splitlines(keepends=True)
    start = next(n for n, line in enumerate(lines) if re.match(r"^  \w+: \{dataset:", line))
    if start and lines[start - 1].startswith("  # ") and _is_note(lines[start - 1], methods):
        start -= 1
    i, j = _region(lines[start:], lambda s: True, lambda s: s.strip() == "")
    return "".join(lines[:start]) + shipped_params(methods) + "".join(lines[start + j:])


def _is_note(line: str, methods) -> bool:
    return any(line.strip() == f"# {m.probe.pipeline.note}" for m in _methods(methods)
               if m.probe.pipeline.note)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m factprobe.scaffold.stages",
                                description="Write the methods' stages of dvc.yaml and "
                                            "params.yaml from the table of methods.")
    p.add_argument("--root", default=".", help="the repository (.)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = p.parse_args(argv)
    root = Path(args.root)
    stale = []
    for name, fill in (("dvc.yaml", with_stages), ("params.yaml", with_params)):
        path = root / name
        old = path.read_text(encoding="utf-8")
        new = fill(old)
        if new != old:
            stale.append(name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run python -m factprobe.scaffold.stages)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
