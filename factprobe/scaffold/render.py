"""Render and write the files of ``factprobe init``: ``dvc.yaml``, ``params.yaml`` and the DVC
plot template, for one source of facts.

The templates are plain text with ``{{key}}`` holes and whole-line ``#@if FLAG`` / ``#@endif``
blocks, not Jinja: the only logic is which stages a source has, and DVC's own ``${...}`` must
pass through untouched (a general template language would need it escaped everywhere).
Rendering is a pure function of the options, so the same flags give the same bytes.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from factprobe.core import atomic
from factprobe.core.errors import UserError
from factprobe.builders.sources.table import SOURCES
from factprobe.scaffold import stages
from factprobe.scaffold.sizing import SHIPPED, Sizes

HEADER = "Written by factprobe init"
# The page `dvc plots show` fills (DVC's plots.html_template, a path relative to .dvc/).
PLOTS_PAGE = "plot-templates/plots.html"
HTML_TEMPLATE = "../" + PLOTS_PAGE
# The sources are build facts' own table: which flag each reads, how init's pipeline gets
# other names for it (Source.aliases) and whether `factprobe build nobel` reads it.
# Sources whose facts come from a file (a DVC dependency); the others ask an endpoint.
FILE_SOURCES = tuple(n for n, s in SOURCES.items() if s.reads == "path")
# (template in files/, path in the user's repository)
FILES = (("dvc.yaml.in", "dvc.yaml"), ("params.yaml.in", "params.yaml"),
         ("series.json", "plot-templates/series.json"), ("plots.html", PLOTS_PAGE))
NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


@dataclass(frozen=True)
class InitConfig:
    dir: str
    source: str = "rdf"
    path: str = ""           # relative to dir
    endpoint: str = ""
    relations: str = "all"
    name: str = "graph"
    lang: str = "en"
    sizes: Sizes = SHIPPED   # params sized to the graph (factprobe.scaffold.sizing)


def render(text: str, values: dict[str, str], flags: dict[str, bool]) -> str:
    """Fill ``{{key}}`` holes and keep the ``#@if FLAG`` blocks whose flag is true.

    >>> render("a {{x}}\\n#@if on\\nb ${dvc}\\n#@endif\\n#@if off\\nc\\n#@endif\\n", {"x": "1"},
    ...        {"on": True, "off": False})
    'a 1\\nb ${dvc}\\n'
    """
    out, keep = [], [True]
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s.startswith("#@if "):
            keep.append(keep[-1] and flags[s[5:].strip()])
        elif s == "#@endif":
            keep.pop()
        elif keep[-1]:
            out.append(re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], line))
    assert len(keep) == 1, "unbalanced #@if in a template"
    return "".join(out)


def rendered(cfg: InitConfig) -> dict[str, str]:
    """{path in the repository: text} for ``cfg``."""
    # DVC pastes a value into the command as it is and runs it in a shell: every value that
    # comes from the user or the graph is single-quoted there (init refuses a quote in one).
    source = SOURCES[cfg.source]
    # an endpoint source whose flag is optional (wikidata) is read from its default endpoint
    flag = (" --path='${facts.path}'" if source.reads == "path" else
            " --endpoint='${facts.endpoint}'" if source.needs is not None else "")
    via = source.aliases
    values = {"source": cfg.source, "source_flag": flag, "name": cfg.name,
              "nobel_source": cfg.source if source.nobel else "",
              "base": "aliases" if via else "facts",
              "via": via or "", "lang": json.dumps(cfg.lang), "path": json.dumps(cfg.path),
              "endpoint": json.dumps(cfg.endpoint), "relations": json.dumps(cfg.relations),
              "sizing": cfg.sizes.note()}
    values.update({k: str(getattr(cfg.sizes, k)) for k in (
        "choices", "min_facts", "min_objects", "train", "test", "negatives", "examples", "block",
        "masked_batch", "max_epochs", "schedule_epochs")})
    flags = {"path": source.reads == "path", "aliases": via is not None,
             "nobel": source.nobel}
    values.update(_vega())
    # the methods' stages and params, from the table of methods (factprobe.scaffold.stages);
    # their own {{holes}} (init's sizes) are filled here, before the templates are
    values["eval_stages"] = stages.init_stages()
    values["eval_params"] = render(stages.init_params(), values, {})
    files = resources.files("factprobe.scaffold") / "files"
    return {target: render((files / name).read_text(encoding="utf-8"), values, flags)
            for name, target in FILES}


def _vega() -> dict[str, str]:
    """The vendored charting library of the report page, to inline into the plots page: DVC's
    own page loads it from a CDN, and draws nothing offline."""
    vendor = resources.files("factprobe.evaluators.report.html") / "vendor"
    out = {}
    for name in ("vega", "vega-lite", "vega-embed"):
        key = name.replace("-", "_")
        out[key] = (vendor / f"{name}.min.js").read_text(encoding="utf-8")
        out[f"{key}_license"] = (vendor / f"LICENSE-{name}").read_text(encoding="utf-8").strip()
    return out


def ours(path: Path) -> bool:
    """Whether a file was written by ``factprobe init`` (its header, in the first lines)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = [fh.readline() for _ in range(3)]
    except OSError:
        return False
    return any(HEADER in line for line in head)


def refuse(root: Path, force: bool) -> None:
    """Refuse a file that is there, unless ``force`` and factprobe init wrote it (init checks
    before reading the graph, which can take a while)."""
    for _, rel in FILES:
        path = root / rel
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise UserError(f"{path} is not a plain file; move it away or init another folder")
        if path.exists() and not ours(path):
            raise UserError(f"{path} exists and factprobe init did not write it; move it away "
                            f"or init another folder (--force replaces only factprobe's own)")
        if path.exists() and not force:
            raise UserError(f"{path} exists (written by factprobe init); --force rewrites it")


def write(cfg: InitConfig, force: bool) -> list[Path]:
    """Write the files; refuse (before writing any) a file that is there, unless ``force``
    and factprobe init wrote it. Each file is written to a temporary name and renamed."""
    root = Path(cfg.dir)
    texts = rendered(cfg)
    refuse(root, force)
    written = []
    for rel, text in texts.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, text)
        written.append(path)
    (root / "templates").mkdir(exist_ok=True)
    return written


def shell_safe(flag: str, value: str, fix: str = "rename the file or folder") -> str:
    """``value`` if it can sit between single quotes in dvc.yaml's shell commands (and on one
    line of params.yaml); otherwise a :class:`UserError` saying what to change.

    >>> shell_safe("--path", "a b;$(touch x)&`y`<z>.ttl")
    'a b;$(touch x)&`y`<z>.ttl'
    >>> shell_safe("--path", "O'Brien.ttl")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: --path "O'Brien.ttl": a ' cannot be passed safely through dvc.yaml's shell commands; rename the file or folder
    """
    bad = next((c for c in value if c == "'" or not c.isprintable()), None)
    if bad is not None:
        what = "a '" if bad == "'" else f"the unprintable character {bad!r}"
        raise UserError(f"--{flag.lstrip('-')} {value!r}: {what} cannot be passed safely "
                        f"through dvc.yaml's shell commands; {fix}")
    return value


def default_name(stem: str, fallback: str) -> str:
    """--name's default: the graph file's name made a valid name, or ``fallback``.

    >>> default_name("My Graph;$(x)", "rdf"), default_name("!!!", "rdf")
    ('my-graph-x', 'rdf')
    """
    name = re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-_")
    return name if NAME.fullmatch(name) else fallback


def check_name(name: str) -> str:
    """
    >>> check_name("langs"), check_name("My Graph")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: --name 'My Graph': lower-case letters, digits, - and _ only (e.g. my-graph)
    """
    if not NAME.fullmatch(name):
        raise UserError(f"--name {name!r}: lower-case letters, digits, - and _ only "
                        f"(e.g. my-graph)")
    return name


def set_plots_page(root: Path) -> str:
    """Point DVC's ``plots.html_template`` (the repository's ``.dvc/config``) at the plots page,
    with DVC's own ``dvc config`` (it keeps the file's other settings and comments). A value the
    user set is kept. Returns what was done, or the command to run when it could not be."""
    command = f"dvc config plots.html_template {HTML_TEMPLATE}"
    dvc = shutil.which("dvc")
    if not (root / ".dvc").is_dir() or dvc is None:
        why = "no .dvc/ here yet" if dvc else "dvc is not installed"
        return f"{why}: after `dvc init`, run `{command}` (`dvc plots show` then draws offline)"
    try:
        now = subprocess.run([dvc, "config", "plots.html_template"], cwd=root,
                             capture_output=True, text=True, timeout=120)
        if now.returncode == 0 and now.stdout.strip() not in ("", HTML_TEMPLATE):
            return (f"kept your plots.html_template ({now.stdout.strip()}); `{command}` makes "
                    f"`dvc plots show` draw offline")
        done = subprocess.run([dvc, "config", "plots.html_template", HTML_TEMPLATE], cwd=root,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not run dvc ({exc}); run `{command}`"
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0][:200]
        return f"`{command}` failed ({first}); run it yourself once dvc works here"
    return "set plots.html_template in .dvc/config: `dvc plots show` draws offline"
