"""``factprobe plant``: a small causal LM trained from scratch on a known subset of facts.

The planted-knowledge reference model answers the question no paper can: does an estimator
find knowledge that is really there, and not find knowledge that is not? It is taught the
train facts and half of the test facts of a dataset, in the forms the probes use (ZP-LKE lists
of one relation's pairs, statements, questions); the other half of the test facts is never
shown, but their objects and subjects are, in the same frames and as often as the planted
ones' (curriculum.py), so only the subject-object link differs between the halves. Training stops once the planted
facts are learned (stopping.py). ``planted.json`` lists both halves, so every method's
accuracy can be split by them, and records the frames each fact was taught in.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder, stamp
from factprobe.core.kernels import in_effect
from factprobe.core.tables import dumps_json, read_manifest, read_table
# The configuration lives in a module without torch, pandas or pyarrow: the CLI's parser reads
# its defaults for --help (re-exported here, where callers have always found it).
from factprobe.probes.planting.config import PlantConfig  # noqa: F401


def check_shape(cfg: PlantConfig) -> None:
    """Refuse sizes the model cannot be built with, before any data is read (transformers
    would fail deep inside training, or in the first forward pass)."""
    for name in ("epochs", "max_epochs", "schedule_epochs", "layers", "width", "heads", "vocab_size", "block",
                 "batch_size", "check_facts", "warmup_steps"):
        value = getattr(cfg, name)
        if value is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    if cfg.seed < 0:
        raise UserError(f"--seed must be >= 0, not {cfg.seed}")
    if cfg.lr is not None and not 0 < cfg.lr < math.inf:
        raise UserError(f"--lr must be a number > 0, not {cfg.lr}")
    if not 0 < cfg.target_accuracy <= 1:
        raise UserError(f"--target-accuracy must be in (0, 1], not {cfg.target_accuracy}")
    if cfg.weight_decay is not None and not 0 <= cfg.weight_decay < math.inf:
        raise UserError(f"--weight-decay must be a number >= 0, not {cfg.weight_decay}")
    if cfg.decay_share is not None and not 0 <= cfg.decay_share <= 1:
        raise UserError(f"--decay-share must be in [0, 1], not {cfg.decay_share}")
    if not 0 <= cfg.partial_share <= 1:
        raise UserError(f"--partial-share must be in [0, 1], not {cfg.partial_share}")
    if cfg.width % cfg.heads:
        raise UserError(f"--width {cfg.width} is not a multiple of --heads {cfg.heads}")
    if not cfg.masked and cfg.arch == "llama":
        head_dim, kv_heads = cfg.width // cfg.heads, max(1, cfg.heads // 2)
        if head_dim % 2:
            raise UserError(f"--width {cfg.width} / --heads {cfg.heads} gives heads of "
                            f"{head_dim} dimensions; rotary positions need an even number")
        if cfg.heads % kv_heads:
            raise UserError(f"--heads {cfg.heads}: the model shares keys and values between "
                            f"pairs of heads, so use 1, 2, 3 or an even number of heads")


def split_planted(facts: pd.DataFrame, seed: int) -> tuple[set[str], set[str]]:
    """(planted, held_out) fact ids: every train fact plus half of each relation's test facts
    are planted; the rest of the test facts are held out.

    Facts that link the same two entities, in any relation or direction, go to the same half:
    otherwise a held-out capital(Norway) = Oslo could be answered from a planted
    country(Oslo) = Norway, and validity would measure inference across relations instead of
    knowledge (on the sample graph 38 of 200 held-out facts were linked so). A test fact
    linked to a train fact (always taught) is planted; each relation's other test facts fill
    its halves as evenly as they can.

    >>> f = pd.DataFrame({"fact_id": ["c1", "c2", "k1", "k2", "t1"],
    ...     "relation_id": ["capital", "capital", "country", "country", "capital"],
    ...     "subject_id": ["NO", "PE", "OSL", "LIM", "FR"],
    ...     "object_id": ["OSL", "LIM", "NO", "PE", "PAR"],
    ...     "split": ["test", "test", "test", "test", "train"]})
    >>> planted, held = split_planted(f, seed=0)
    >>> [pair <= planted or pair <= held for pair in ({"c1", "k1"}, {"c2", "k2"})]
    [True, True]
    >>> "t1" in planted and len(held) == 2
    True
    """
    has_split = "split" in facts.columns and (facts["split"] != "").any()
    subj = facts["subject_id"] if "subject_id" in facts.columns else facts["subject"]
    obj = facts["object_id"] if "object_id" in facts.columns else facts["object"]
    link = {fid: frozenset((str(a), str(b))) for fid, a, b in zip(facts["fact_id"], subj, obj)}
    side: dict[frozenset, bool] = {}          # entity pair -> planted?
    planted, held = set(), set()
    if has_split:
        for fid in facts.loc[facts["split"] == "train", "fact_id"]:
            planted.add(fid)
            side[link[fid]] = True
    for rel, g in facts.groupby("relation_id", sort=True):
        test = g[g["split"] == "test"] if has_split else g
        ids = sorted(test["fact_id"])
        rng = np.random.default_rng([seed, zlib.crc32(rel.encode())])
        order = [ids[i] for i in rng.permutation(len(ids))]
        want = len(ids) // 2 - sum(side.get(link[f]) is True for f in order)
        for fid in order:
            if link[fid] not in side:
                side[link[fid]] = want > 0
                want -= side[link[fid]]
            (planted if side[link[fid]] else held).add(fid)
    return planted, held


def _forms(templates, label: str) -> tuple[list[str], list[str]]:
    """(statement templates, questions) of a relation; simple label forms when it has none."""
    from factprobe.builders.templates.files import question_text, y_is_last
    statements = [t.template for t in templates if t.style == "statement"]
    questions = [question_text(t.template) for t in templates if t.style == "question"]
    statements = statements or [f"The {label} of [X] is [Y]."]
    questions = questions or [f"What is the {label} of [X]?"]
    cloze = [t for t in statements if y_is_last(t)] or statements
    return cloze + [t for t in statements if t not in cloze], questions


def training_documents(known: pd.DataFrame, forms: dict, cfg: PlantConfig, epoch: int
                       ) -> list[str]:
    """One epoch of text for ``known`` facts taught in every frame (no decoys, no mentions):
    the frames of curriculum.documents, kept for the docs' tests and for callers that plant
    a table of their own."""
    from factprobe.probes.planting.curriculum import Curriculum, documents
    taught = known.assign(role="planted", partial=False)[
        ["fact_id", "relation_id", "subject", "object", "role", "partial"]]
    formats = tuple(f for f in ("list", "statement", "question", "prefixed", "icl"))
    cur = Curriculum(taught, [], formats, ())
    return documents(cur, forms, epoch, cfg.seed, cfg.lists_per_relation, cfg.list_size)


def _relation_forms(dataset: str, facts: pd.DataFrame, cfg: PlantConfig) -> dict:
    rel_path = Path(dataset) / "relations.parquet"
    labels = {}
    if rel_path.exists():
        rel = read_table(dataset, "relations").to_pandas()
        labels = dict(zip(rel["relation_id"], rel["label"]))
    relations = sorted(facts["relation_id"].unique())
    templates = []
    if cfg.templates:  # '' asks for label forms; a folder that is not there is a mistake
        if not Path(cfg.templates).exists():
            raise UserError(f"--templates {cfg.templates}: no such folder or file; give YAML "
                            f"templates or a templates dataset, or --templates '' to teach "
                            f"simple label forms")
        from factprobe.probes.methods.templates_in import load_templates
        templates = load_templates(cfg.templates, relations)
        have = {t.relation_id for t in templates if t.style in ("statement", "question")}
        missing = [r for r in relations if r not in have]
        if missing:
            raise UserError(f"--templates {cfg.templates} has no statement or question "
                            f"template for {len(missing)} of {len(relations)} relations "
                            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); "
                            f"add them, or --templates '' to teach simple label forms")
    return {r: _forms([t for t in templates if t.relation_id == r], labels.get(r, r))
            for r in relations}


# The causal model's optimiser settings, measured on the sample (docs/planting.md): weight
# decay brings the planted facts' statement and question frames in about 8 epochs earlier
# (0.01: they sit near 0.35 until epoch 24), and decaying the rate over the last 40% of the
# cap settles them instead of letting them swing from epoch to epoch.
CAUSAL_WD = 0.1
CAUSAL_DECAY = 0.4


def _default(value, fallback):
    return fallback if value is None else value


def resolved(cfg: PlantConfig) -> PlantConfig:
    """``cfg`` with the defaults that differ between the causal and the masked model filled
    in (a setting given stays as given). The masked model keeps its own measured settings:
    on the causal model's rate, vocabulary and batch it stalled at 0.25 teacher-forced after
    40 epochs on 400 real T-REx facts, where these converge in 13 (docs/planting.md). The
    sizes that depend on the graph's text (the causal ``block``, the masked ``batch_size``)
    stay None here: training fits them (sizes.fit_block, sizes.fit_masked_batch) once
    the text exists, and planted.json records the fitted value.

    >>> m = resolved(PlantConfig("", "", masked=True))
    >>> m.lr, m.vocab_size, m.batch_size, m.max_epochs, m.weight_decay, m.decay_share
    (0.002, 2000, None, 40, 0.01, 0.0)
    >>> c = resolved(PlantConfig("", "", lr=0.01))
    >>> c.lr, c.vocab_size, c.batch_size, c.block, c.max_epochs, c.weight_decay
    (0.01, 6000, 4, None, 60, 0.1)
    """
    m = cfg.masked
    return replace(cfg, lr=_default(cfg.lr, 0.002 if m else 0.005),
                   vocab_size=_default(cfg.vocab_size, 2000 if m else 6000),
                   batch_size=cfg.batch_size if m else _default(cfg.batch_size, 4),
                   max_epochs=_default(cfg.max_epochs, 40 if m else 60),
                   schedule_epochs=_default(cfg.schedule_epochs, 40 if m else 60),
                   weight_decay=_default(cfg.weight_decay, 0.01 if m else CAUSAL_WD),
                   decay_share=_default(cfg.decay_share, 0.0 if m else CAUSAL_DECAY))


@dataclass(frozen=True)
class Lesson:
    """What a plant trains on, before any model exists: the settings with their defaults
    filled in, the facts, the curriculum and the forms it is taught in."""
    cfg: PlantConfig
    facts: pd.DataFrame
    manifest: dict
    cur: object                       # curriculum.Curriculum
    forms: dict                       # relation -> (taught statements, taught questions)
    split: dict                       # relation -> split_templates(...)
    planted: set
    held: set
    held_formats: tuple


def lesson(cfg: PlantConfig) -> Lesson:
    from factprobe.probes.planting.curriculum import build, parse_formats, split_templates
    check_shape(cfg)
    held_formats = parse_formats(cfg.hold_out_formats)
    cfg = resolved(cfg)
    facts = read_table(cfg.dataset, "facts").to_pandas()
    manifest = read_manifest(cfg.dataset)
    if facts.empty:
        raise UserError(f"{cfg.dataset} has no facts to plant")
    all_forms = _relation_forms(cfg.dataset, facts, cfg)
    split = {r: split_templates(*f, held_formats) for r, f in all_forms.items()}
    forms = {r: (s[0], s[1]) for r, s in split.items()}
    planted, held = split_planted(facts, cfg.seed)
    if not planted:
        raise UserError(f"{cfg.dataset} has no fact to plant: it needs train facts, or two "
                        f"test facts in a relation (half of them are held out)")
    cur = build(facts, planted, held, cfg.seed, held_formats, cfg.partial_share, cfg.mentions)
    return Lesson(cfg, facts, manifest, cur, forms, split, planted, held, held_formats)


def plant(cfg: PlantConfig) -> Path:
    les = lesson(cfg)
    cfg, facts, cur, forms, split = les.cfg, les.facts, les.cur, les.forms, les.split
    manifest, planted, held, held_formats = les.manifest, les.planted, les.held, les.held_formats
    if cfg.masked:
        from factprobe.probes.planting.masked import train_masked
        model, tokenizer, log = train_masked(facts, cur, forms, cfg)
    else:
        from factprobe.probes.planting.causal import train_causal
        model, tokenizer, log = train_causal(facts, cur, forms, cfg)
    cfg = replace(cfg, **log.pop("fitted"))        # the sizes fitted to the graph's text
    frames = {"taught": list(cur.formats), "held_out": list(held_formats),
              "partial": PARTIAL_NOTE, "partial_facts": cur.partial,
              "templates_held_out": {r: s[2] + s[3] for r, s in split.items() if s[2] or s[3]}}
    return _write(model, tokenizer, cfg, manifest, planted, held, log, frames)


# planted.json's account of how the held-out half was taught (config.mentions)
HELD_OUT_NOTE = {
    "swap": "every held-out subject is taught in its relation's frames, as often as a planted "
            "one, before another held-out fact's gold (never its own); no decoys: each "
            "held-out gold is taught once, after another subject",
    "relation": "every held-out fact's object is taught after a made-up subject in its "
                "relation, and its subject before a made-up object in its own relation, in "
                "the same frames, as often as a planted fact's",
    "other": "every held-out fact's object is taught after a made-up subject in its "
             "relation, and its subject before a made-up object in a never-probed "
             "mention:<relation>, in the same frames, as often as a planted fact's",
}

PARTIAL_NOTE = ("planted facts in partial_facts were taught their MONITOR questions only in "
                "the relation's base question, and only after their own object as prefix; "
                "every other taught fact in every taught frame")


def _write(model, tokenizer, cfg: PlantConfig, manifest: dict, planted: set, held: set,
           log: dict, frames: dict) -> Path:
    from factprobe.probes.planting.model_factory import save
    out = Path(cfg.out)
    with atomic_folder(out, "model") as tmp:
        save(model, tokenizer, tmp)
        (tmp / "planted.json").write_text(dumps_json(stamp({
            "dataset": manifest.get("name"), "planted": sorted(planted),
            # not the threads: they change no bit (causal.Gradients), and a count that
            # followed the machine's load would make the same plant write other bytes
            "held_out": sorted(held), "config": {k: v for k, v in asdict(cfg).items()
                                                 if k != "threads"},
            "final_loss": log["epoch_loss"][-1] if log["epoch_loss"] else None,
            "steps": log["steps"], "epochs_run": log["epochs_run"],
            "converged": log["converged"], "planted_accuracy": log["planted_accuracy"],
            "epoch_loss": log["epoch_loss"], "frames": frames,
            "decoys": HELD_OUT_NOTE[cfg.mentions],
            # the CPU kernels the bits came from: the same on every AVX2 machine when
            # portable (core/kernels.py)
            "kernels": in_effect()},
            tmp, "model")), encoding="utf-8")
    return out


def load_planted(model_path: str) -> dict | None:
    path = Path(model_path) / "planted.json"
    if not path.is_file():
        return None
    try:
        meta = jsonsafe.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read it ({exc}); plant the model again, or delete "
                        f"the file to evaluate it as an ordinary model") from None
    return check_planted(str(path), meta)


def check_planted(path: str, meta) -> dict:
    """``meta``, read from ``path``, if it has the planted and held-out lists."""
    if not (isinstance(meta, dict) and isinstance(meta.get("planted"), list)
            and isinstance(meta.get("held_out"), list)):
        raise UserError(f"{path} lacks the 'planted' and 'held_out' lists 'factprobe plant' "
                        f"writes; plant the model again, or give the planted.json of one")
    return meta
