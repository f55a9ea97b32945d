"""``factprobe plant``: a small causal LM trained from scratch on a known subset of facts.

The planted-knowledge reference model answers the question no paper can: does an estimator
find knowledge that is really there, and not find knowledge that is not? It is taught the
train facts and half of the test facts of a dataset, in the forms the probes use (ZP-LKE lists
of one relation's pairs, statements, questions); the other half of the test facts is never
shown. ``planted.json`` lists both halves, so every method's accuracy can be split by them.
"""
from __future__ import annotations

import json
import math
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from builders.core.errors import UserError
from builders.core.outdir import atomic_folder, stamp
from builders.core.tables import dumps_json, read_manifest, read_table


@dataclass(frozen=True)
class PlantConfig:
    dataset: str
    out: str
    seed: int = 0
    arch: str = "llama"               # rotary positions: cheaper here than GPT-2's, and robust
    layers: int = 4
    width: int = 128
    heads: int = 4
    vocab_size: int = 2000
    block: int = 512                  # tokens per training sequence (documents are packed)
    epochs: int | None = None         # None: 60 causal (the generative frames need them), 15 masked
    lists_per_relation: int = 8       # ZP-LKE-style lists per relation and epoch
    list_size: int = 50               # pairs per list: as many as the probe shows
    batch_size: int = 8
    lr: float = 2e-3
    templates: str = "data/templates"  # statement and question forms; label forms if absent
    masked: bool = False               # a BERT-style masked LM instead (for BELIEF)
    progress: bool = True


def check_shape(cfg: PlantConfig) -> None:
    """Refuse sizes the model cannot be built with, before any data is read (transformers
    would fail deep inside training, or in the first forward pass)."""
    for name in ("epochs", "layers", "width", "heads", "vocab_size", "block", "batch_size"):
        value = getattr(cfg, name)
        if value is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    if cfg.seed < 0:
        raise UserError(f"--seed must be >= 0, not {cfg.seed}")
    if not 0 < cfg.lr < math.inf:
        raise UserError(f"--lr must be a number > 0, not {cfg.lr}")
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
    are planted; the rest of the test facts are held out."""
    has_split = "split" in facts.columns and (facts["split"] != "").any()
    planted, held = set(), set()
    for rel, g in facts.groupby("relation_id", sort=True):
        test = g[g["split"] == "test"] if has_split else g
        if has_split:
            planted |= set(g.loc[g["split"] == "train", "fact_id"])
        ids = sorted(test["fact_id"])
        rng = np.random.default_rng([seed, zlib.crc32(rel.encode())])
        order = rng.permutation(len(ids))
        half = len(ids) // 2
        planted |= {ids[i] for i in order[:half]}
        held |= {ids[i] for i in order[half:]}
    return planted, held


def _forms(templates, label: str) -> tuple[list[str], list[str]]:
    """(statement templates, questions) of a relation; simple label forms when it has none."""
    from builders.templates.files import question_text, y_is_last
    statements = [t.template for t in templates if t.style == "statement"]
    questions = [question_text(t.template) for t in templates if t.style == "question"]
    statements = statements or [f"The {label} of [X] is [Y]."]
    questions = questions or [f"What is the {label} of [X]?"]
    cloze = [t for t in statements if y_is_last(t)] or statements
    return cloze + [t for t in statements if t not in cloze], questions


def training_documents(known: pd.DataFrame, forms: dict, cfg: PlantConfig, epoch: int
                       ) -> list[str]:
    """One epoch of text: ZP-LKE lists in the probe's exact format, then for every known fact
    one statement and one question, the template changing from epoch to epoch, shuffled.

    The question takes, in turn, the shapes the generative probes ask in: MONITOR's
    "...?\nAnswer: y." (bare, and after a "z. " prefix that is the gold or another object of
    the relation, as in MONITOR's positive and negative prompts) and BELIEF-ICL's
    "Q: ...\nA: y." (a question, or a statement with [MASK], after the probe's instruction).
    A model taught these answers a known fact whatever the frame; it never sees the held-out
    facts in any of them."""
    from builders.templates.files import fill
    from probes.methods.belief_icl import INSTRUCTION
    rng = np.random.default_rng([cfg.seed, epoch])
    docs = []
    for rel, g in known.groupby("relation_id", sort=True):
        pairs = list(zip(g["subject"], g["object"]))
        objects = sorted(set(g["object"]))
        for _ in range(cfg.lists_per_relation):
            k = min(len(pairs), cfg.list_size + 1)
            idx = rng.permutation(len(pairs))[:k]
            docs.append(", ".join(f"{pairs[i][0]} {pairs[i][1]}" for i in idx))
        statements, questions = forms[rel]
        for n, (x, y) in enumerate(pairs):
            turn = epoch + n
            docs.append(fill(statements[turn % len(statements)], x, y))
            q = fill(questions[turn % len(questions)], x)
            shape = turn % 4
            if shape == 0:
                docs.append(f"{q}\nAnswer: {y}.")
            elif shape == 1:
                z = y if rng.random() < 0.5 else objects[int(rng.integers(len(objects)))]
                docs.append(f"{z}. {q}\nAnswer: {y}.")
            elif shape == 2:
                docs.append(f"{INSTRUCTION['qa']}\nQ: {q}\nA: {y}.")
            else:
                masked = fill(statements[(turn // 4) % len(statements)], x).replace("[Y]",
                                                                                   "[MASK]")
                docs.append(f"{INSTRUCTION['mask']}\nQ: {masked}\nA: {y}.")
    order = rng.permutation(len(docs))
    return [docs[i] for i in order]


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
        from probes.methods.templates_in import load_templates
        templates = load_templates(cfg.templates, relations)
    return {r: _forms([t for t in templates if t.relation_id == r], labels.get(r, r))
            for r in relations}


def plant(cfg: PlantConfig) -> Path:
    check_shape(cfg)
    cfg = replace(cfg, epochs=cfg.epochs if cfg.epochs is not None else
                  (15 if cfg.masked else 60))
    facts = read_table(cfg.dataset, "facts").to_pandas()
    manifest = read_manifest(cfg.dataset)
    if facts.empty:
        raise UserError(f"{cfg.dataset} has no facts to plant")
    forms = _relation_forms(cfg.dataset, facts, cfg)
    planted, held = split_planted(facts, cfg.seed)
    known = facts[facts["fact_id"].isin(planted)]
    if known.empty:
        raise UserError(f"{cfg.dataset} has no fact to plant: it needs train facts, or two "
                        f"test facts in a relation (half of them are held out)")
    if cfg.masked:
        from probes.planting.masked import train_masked
        model, tokenizer, losses, total = train_masked(facts, known, forms, cfg)
    else:
        model, tokenizer, losses, total = _train_causal(facts, known, forms, cfg)
    return _write(model, tokenizer, cfg, manifest, planted, held, losses, total)


def _train_causal(facts, known, forms, cfg: PlantConfig):
    import torch

    from probes.planting.model_factory import causal_model, train_tokenizer

    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)
    vocab_text = training_documents(known, forms, cfg, 0)
    # Names of every entity (not the facts) so held-out subjects and choices tokenise normally.
    names = sorted(set(facts["subject"]) | set(facts["object"]) |
                   {c for cs in facts.get("choices", pd.Series([], dtype=object)) for c in cs})
    tokenizer = train_tokenizer(vocab_text + names, vocab_size=cfg.vocab_size,
                                progress=cfg.progress)
    model = causal_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         max_positions=max(1024, cfg.block), seed=cfg.seed, arch=cfg.arch)
    eos = tokenizer.eos_token_id
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)

    def blocks(epoch: int) -> torch.Tensor:
        stream: list[int] = []
        for doc in training_documents(known, forms, cfg, epoch):
            stream.extend(tokenizer(doc)["input_ids"] + [eos])
        n = len(stream) // cfg.block
        return torch.tensor(stream[: n * cfg.block]).view(n, cfg.block)

    steps_per_epoch = math.ceil(len(blocks(0)) / cfg.batch_size)
    if steps_per_epoch == 0:
        raise UserError(f"--block {cfg.block} is longer than an epoch of training text "
                        f"({sum(len(tokenizer(d)['input_ids']) + 1 for d in vocab_text)} "
                        f"tokens); lower --block")
    total = steps_per_epoch * cfg.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total,
                                                pct_start=0.1)
    from tqdm import tqdm
    model.train()
    losses = []
    with tqdm(total=total, desc="plant", unit="step", disable=not cfg.progress) as bar:
        for epoch in range(cfg.epochs):
            data = blocks(epoch)
            perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(epoch))
            for i in range(0, len(data), cfg.batch_size):
                batch = data[perm[i:i + cfg.batch_size]]
                loss = model(input_ids=batch, labels=batch).loss
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
    model.eval()
    return model, tokenizer, losses, total


def _write(model, tokenizer, cfg: PlantConfig, manifest: dict, planted: set, held: set,
           losses: list[float], total: int) -> Path:
    from probes.planting.model_factory import save
    steps_per_epoch = max(1, total // max(1, cfg.epochs))
    out = Path(cfg.out)
    with atomic_folder(out, "model") as tmp:
        save(model, tokenizer, tmp)
        (tmp / "planted.json").write_text(dumps_json(stamp({
            "dataset": manifest.get("name"), "planted": sorted(planted),
            "held_out": sorted(held), "config": asdict(cfg) | {"dataset": cfg.dataset},
            "final_loss": round(float(np.mean(losses[-steps_per_epoch:])), 4),
            "steps": total}, tmp, "model")), encoding="utf-8")
    return out


def load_planted(model_path: str) -> dict | None:
    path = Path(model_path) / "planted.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
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
