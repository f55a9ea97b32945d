"""`factprobe plant`'s epoch, and a whole plant, on the path before issue 30 against today's, in
one run: the old path is kept here, verbatim, so both train the same model.

    python benchmarks/bench_plant.py --epochs 3 --json .bench/plant.json

For the causal and the masked model (params.yaml's ``plant`` and ``plant_masked`` settings)
it times, alternating old and new within each repetition:

- the parts of one epoch: writing the documents (the same code on both paths), turning them
  into training blocks (old: a tokenizer call per document and a Python list; new: one
  batched call into an array), the masked model's masks and batches (old: a Python loop over
  every token; new: array operations), the accuracy check (old: tokenised every epoch, the
  vocabulary projection over every position; new: tokenised once, projected only where an
  object token is read), and the optimizer steps (old: the whole batch on one thread, the
  masked model's head at every position; new: the batch's micro-batches, on one thread and
  on two, the masked head at the masked positions only);
- a whole plant of ``--epochs`` epochs: old on one thread, new on one and on two, and
  whether the new path trained the same bits on one thread and on two (it must: the bytes
  depend on ``--micro-batches``, never on the threads). The old path trained other bits: its
  gradient is the whole batch's, in one sum.

Times are CPU seconds of the process (``time.process_time``), and wall seconds for what runs
on two threads: on a shared machine run it at a higher priority than the other jobs (``nice
-n -5``), or the wall clock measures them. Ratios are old / new (above 1: the new path is
faster). Needs data/datasets/sample-mc.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, emit, machine, versions  # noqa: E402


def _params() -> dict:
    import yaml
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def configs(dataset: str, epochs: int, templates: str = str(ROOT / "data/templates"),
            **shape):
    """params.yaml's causal and masked settings; ``shape`` (width, vocab_size, block: not
    None) overrides them, for toy runs."""
    from factprobe.probes.planting.config import PlantConfig
    p, m = _params()["plant"], _params()["plant_masked"]
    common = dict(dataset=dataset, out="", templates=templates,
                  epochs=epochs, progress=False, threads=1)  # new path on 2: replace()
    causal = PlantConfig(**common, seed=p["seed"], max_epochs=p["max_epochs"],
                         target_accuracy=p["target_accuracy"], layers=p["layers"],
                         width=p["width"], vocab_size=p["vocab_size"], block=p["block"],
                         batch_size=p["batch_size"], lr=p["lr"],
                         weight_decay=p["weight_decay"], decay_share=p["decay_share"],
                         schedule_epochs=p["schedule_epochs"],
                         lists_per_relation=p["lists_per_relation"])
    masked = PlantConfig(**common, masked=True, seed=m["seed"], max_epochs=m["max_epochs"],
                         target_accuracy=m["target_accuracy"], lr=m["lr"],
                         layers=m["layers"], vocab_size=m["vocab_size"],
                         batch_size=m["batch_size"])
    shape = {k: v for k, v in shape.items() if v is not None}
    return (replace(causal, **shape),
            replace(masked, **{k: v for k, v in shape.items() if k != "block"}))


# ---- the old path (probes/planting before issue 30), kept to time it and to compare bits ----

def old_causal_accuracy(model, tokenizer, checks, batch: int = 64) -> float:
    import torch
    from factprobe.probes.planting.stopping import _padded
    if not checks:
        return float("nan")
    hits = 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(checks), batch):
            rows = []
            for c in checks[i:i + batch]:
                head = tokenizer(c.prefix)["input_ids"]
                obj = tokenizer(c.obj)["input_ids"]
                rows.append((head + obj, len(head), len(obj)))
            ids, attn = _padded([r for r, _, _ in rows], tokenizer.pad_token_id)
            top = model(input_ids=ids, attention_mask=attn).logits.argmax(-1)
            for j, (r, h, k) in enumerate(rows):
                hits += bool((top[j, h - 1:h - 1 + k] == ids[j, h:h + k]).all())
    model.train()
    return hits / len(checks)


def old_masked_accuracy(model, tokenizer, checks, batch: int = 64) -> float:
    import torch
    from factprobe.probes.planting.stopping import _padded
    if not checks:
        return float("nan")
    hits = 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(checks), batch):
            rows = []
            for c in checks[i:i + batch]:
                h = tokenizer(c.prefix, add_special_tokens=False)["input_ids"]
                o = tokenizer(" " + c.obj if c.prefix.endswith(" ") else c.obj,
                              add_special_tokens=False)["input_ids"]
                t = tokenizer(c.tail, add_special_tokens=False)["input_ids"]
                rows.append(([tokenizer.cls_token_id] + h, o, t + [tokenizer.sep_token_id]))
            ids, attn = _padded([a + [tokenizer.mask_token_id] * len(o) + t for a, o, t in rows],
                                tokenizer.pad_token_id)
            top = model(input_ids=ids, attention_mask=attn).logits.argmax(-1)
            for j, (a, o, _) in enumerate(rows):
                hits += top[j, len(a):len(a) + len(o)].tolist() == o
    model.train()
    return hits / len(checks)


def old_blocks(tokenizer, docs, block: int):
    import torch
    eos = tokenizer.eos_token_id
    stream: list[int] = []
    for doc in docs:
        stream.extend(tokenizer(doc)["input_ids"] + [eos])
    n = len(stream) // block
    return torch.tensor(stream[: n * block]).view(n, block)


def old_masked_batches(encoded, specials, pad_id, mask_id, seed, epoch, batch_size):
    import numpy as np
    from tests.probes.planting.old_paths import old_masks
    return old_masks(encoded, specials, pad_id, mask_id, np.random.default_rng([seed, epoch]),
                     batch_size * 16)[0]


def train_causal_old(facts, cur, forms, cfg):
    """train_causal as it was: every epoch's documents tokenised one by one, epoch 0's
    written three times, the checks tokenised every epoch and projected at every position."""
    import pandas as pd
    import torch
    from factprobe.probes.planting.causal import run_epochs
    from factprobe.probes.planting.curriculum import documents
    from factprobe.probes.planting.model_factory import causal_model, train_tokenizer
    from factprobe.probes.planting.stopping import sample_checks
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)

    def docs(epoch):
        return documents(cur, forms, epoch, cfg.seed, cfg.lists_per_relation, cfg.list_size)
    vocab_text = docs(0)
    names = sorted(set(facts["subject"]) | set(facts["object"]) |
                   {c for cs in facts.get("choices", pd.Series([], dtype=object)) for c in cs})
    tokenizer = train_tokenizer(vocab_text + names, vocab_size=cfg.vocab_size)
    model = causal_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         max_positions=max(1024, cfg.block), seed=cfg.seed, arch=cfg.arch)
    assert len(old_blocks(tokenizer, docs(0), cfg.block))

    def step_batches(epoch):
        data = old_blocks(tokenizer, docs(epoch), cfg.block)
        perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(data), cfg.batch_size):
            batch = data[perm[i:i + cfg.batch_size]]
            yield [lambda batch=batch: model(input_ids=batch, labels=batch).loss]  # one part
    checks = sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed)
    log = run_epochs(model, step_batches,
                     lambda lanes: old_causal_accuracy(model, tokenizer, checks),
                     cfg, "plant")
    return model, tokenizer, log


def train_masked_old(facts, cur, forms, cfg):
    """train_masked as it was: masks drawn and batches filled token by token, the checks
    tokenised every epoch and projected at every position."""
    import torch
    from factprobe.probes.planting.causal import run_epochs
    from factprobe.probes.planting.masked import _statements
    from factprobe.probes.planting.model_factory import masked_model, train_tokenizer
    from factprobe.probes.planting.stopping import sample_checks
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)
    statements = _statements(cur, forms)
    texts = [h + y + t for h, y, t in statements]
    names = sorted(set(facts["subject"]) | set(facts["object"]) | set(cur.taught["subject"]))
    tokenizer = train_tokenizer(texts + names, vocab_size=cfg.vocab_size, masked=True)
    tokenizer.add_tokens(sorted({o for o in set(facts["object"]) | set(cur.taught["object"])
                                 if " " not in o}))
    model = masked_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         seed=cfg.seed, dropout=0.0)
    model.resize_token_embeddings(len(tokenizer))
    encoded = _encode_statements(tokenizer, statements)
    specials = set(tokenizer.all_special_ids)

    def step_batches(epoch):
        for ids, attn, labels in old_masked_batches(
                encoded, specials, tokenizer.pad_token_id, tokenizer.mask_token_id, cfg.seed,
                epoch, cfg.batch_size):
            yield [lambda ids=ids, attn=attn, labels=labels: model(
                input_ids=ids, attention_mask=attn, labels=labels).loss]
    checks = sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed,
                           masked=True)
    log = run_epochs(model, step_batches,
                     lambda lanes: old_masked_accuracy(model, tokenizer, checks),
                     cfg, "plant (masked)")
    return model, tokenizer, log


def _encode_statements(tokenizer, statements):
    out = []
    for head, y, tail in statements:
        h = tokenizer(head, add_special_tokens=False)["input_ids"]
        o = tokenizer(" " + y if head.endswith(" ") else y, add_special_tokens=False)[
            "input_ids"] if y else []
        t = tokenizer(tail, add_special_tokens=False)["input_ids"]
        out.append(([tokenizer.cls_token_id] + h + o + t + [tokenizer.sep_token_id],
                    1 + len(h), 1 + len(h) + len(o)))
    return out


# ---- timing ----

# CPU seconds of this process (all its threads), not wall time: training runs on one thread,
# and on a shared 2-core machine the wall clock mostly measures the other jobs.
clock = time.process_time


def _clock(fn, repeat: int) -> float:
    """Median CPU seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def _wall(fn, repeat: int) -> float:
    """Median wall seconds of ``repeat`` calls (what two threads save)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def epoch_parts(les, repeat: int) -> dict:
    """CPU seconds of each part of one epoch (epoch 1), old and new."""
    import torch
    from factprobe.probes.planting.causal import lr_factor  # noqa: F401  (same loop both)
    from factprobe.probes.planting.causal import token_stream
    from factprobe.probes.planting.curriculum import documents
    from factprobe.probes.planting.causal import Gradients
    from factprobe.probes.planting.causal import parts as parts_of
    from factprobe.probes.planting.masked import MaskTable, _statements, masked_loss
    from factprobe.probes.planting.model_factory import (
        causal_model,
        masked_model,
        train_tokenizer,
    )
    from factprobe.probes.planting.stopping import (
        batches_accuracy,
        causal_batches,
        masked_batches,
        sample_checks,
    )
    cfg, cur, forms = les.cfg, les.cur, les.forms
    out: dict = {}
    if not cfg.masked:
        docs = documents(cur, forms, 1, cfg.seed, cfg.lists_per_relation, cfg.list_size)
        tok = train_tokenizer(docs, vocab_size=cfg.vocab_size)
        model = causal_model(tok, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                             max_positions=max(1024, cfg.block), seed=cfg.seed, arch=cfg.arch)
        out["documents"] = _clock(lambda: documents(cur, forms, 1, cfg.seed,
                                                    cfg.lists_per_relation, cfg.list_size),
                                  repeat)
        eos = tok.eos_token_id
        new_blocks = lambda: torch.from_numpy(  # noqa: E731
            token_stream(tok, docs, eos)[: (len(token_stream(tok, docs, eos)) // cfg.block)
                                         * cfg.block].reshape(-1, cfg.block))
        out["tokenise_old"] = _clock(lambda: old_blocks(tok, docs, cfg.block), repeat)
        out["tokenise_new"] = _clock(lambda: token_stream(tok, docs, eos), repeat)
        assert torch.equal(old_blocks(tok, docs, cfg.block), new_blocks())
        data = old_blocks(tok, docs, cfg.block)
        checks = sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed)
        batches = causal_batches(tok, checks)
        out["check_old"] = _clock(lambda: old_causal_accuracy(model, tok, checks), repeat)
        out["check_new"] = _clock(lambda: batches_accuracy(model, batches), repeat)
        out["check_new_with_tokenising"] = _clock(
            lambda: batches_accuracy(model, causal_batches(tok, checks)), repeat)
        batch_list = [data[i:i + cfg.batch_size] for i in range(0, len(data), cfg.batch_size)]
        loss_of = [lambda b=b: model(input_ids=b, labels=b).loss for b in batch_list]
        micro = [[lambda part=b[cut], n=torch.tensor(len(b) * (cfg.block - 1)): model(
                      input_ids=part, labels=part, num_items_in_batch=n).loss
                  for cut in parts_of(len(b), cfg.micro_batches)] for b in batch_list]
    else:
        statements = _statements(cur, forms)
        tok = train_tokenizer([h + y + t for h, y, t in statements], vocab_size=cfg.vocab_size,
                              masked=True)
        model = masked_model(tok, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                             seed=cfg.seed, dropout=0.0)
        encoded = _encode_statements(tok, statements)
        specials = set(tok.all_special_ids)
        table = MaskTable(encoded, specials, tok.pad_token_id)

        def new_masked():
            import numpy as np
            rng = np.random.default_rng([cfg.seed, 1])
            target = table.targets(rng)
            order = rng.permutation(len(encoded))
            bs = cfg.batch_size * 16
            return [table.batch(order[i:i + bs], target, tok.mask_token_id)
                    for i in range(0, len(order), bs)]
        old = lambda: old_masked_batches(encoded, specials, tok.pad_token_id,  # noqa: E731
                                         tok.mask_token_id, cfg.seed, 1, cfg.batch_size)
        out["masks_old"] = _clock(old, repeat)
        out["masks_new"] = _clock(new_masked, repeat)
        assert all(all(torch.equal(a, b) for a, b in zip(x, y))
                   for x, y in zip(old(), new_masked()))
        checks = sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed,
                               masked=True)
        batches = masked_batches(tok, checks)
        out["check_old"] = _clock(lambda: old_masked_accuracy(model, tok, checks), repeat)
        out["check_new"] = _clock(lambda: batches_accuracy(model, batches), repeat)
        loss_of = [lambda b=b: model(input_ids=b[0], attention_mask=b[1], labels=b[2]).loss
                   for b in new_masked()]
        micro = [[lambda cut=cut, b=b, n=torch.tensor(int((b[2] != -100).sum())): masked_loss(
                      model, b[0][cut], b[1][cut], b[2][cut], n)
                  for cut in parts_of(len(b[0]), cfg.micro_batches)] for b in new_masked()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    split = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}

    def steps():
        for f in loss_of:
            t0 = clock()
            loss = f()
            t1 = clock()
            opt.zero_grad()
            loss.backward()
            t2 = clock()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            t3 = clock()
            split["forward"] += t1 - t0
            split["backward"] += t2 - t1
            split["optimizer"] += t3 - t2
    runs = max(1, repeat // 2)
    out["steps"] = _clock(steps, runs)

    def new_steps(grads):
        for m in micro:
            grads(m)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
    for workers in (1, 2):
        with Gradients(model, workers) as grads:
            out[f"steps_new_{workers}_cpu"] = _clock(lambda: new_steps(grads), runs)
            out[f"steps_new_{workers}_wall"] = _wall(lambda: new_steps(grads), runs)
    out["steps_old_wall"] = _wall(steps, runs)
    out.update({f"steps_{k}": v / runs for k, v in split.items()})   # means, for the shares
    out["steps_per_epoch"] = len(loss_of)
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def whole(les, repeat: int) -> dict:
    """A whole plant of cfg.epochs epochs: the old path on one thread, today's on one and on
    two, tokenizer training and model building included: CPU and wall seconds, and whether
    today's path trained the same bits on one thread and on two."""
    import torch
    from factprobe.probes.planting.causal import train_causal
    from factprobe.probes.planting.masked import train_masked
    new, old = (train_masked, train_masked_old) if les.cfg.masked else \
        (train_causal, train_causal_old)
    runs = {"old": (old, les.cfg), "new_1": (new, les.cfg),
            "new_2": (new, replace(les.cfg, threads=2))}
    times: dict[str, list[float]] = {k: [] for k in runs}
    walls: dict[str, list[float]] = {k: [] for k in runs}
    result = {}
    for _ in range(repeat):
        for name, (fn, cfg) in runs.items():
            start, wall = clock(), time.perf_counter()
            model, _, log = fn(les.facts, les.cur, les.forms, cfg)
            times[name].append(clock() - start)
            walls[name].append(time.perf_counter() - wall)
            result[name] = ({k: v.clone() for k, v in model.state_dict().items()}, log)
    same = (result["new_1"][1] == result["new_2"][1]
            and all(torch.equal(result["new_1"][0][k], v) for k, v in result["new_2"][0].items()))
    med = {k: statistics.median(v) for k, v in times.items()}
    wall = {k: statistics.median(v) for k, v in walls.items()}
    return {**{f"{k}_s": round(v, 2) for k, v in med.items()},
            **{f"{k}_wall_s": round(v, 2) for k, v in wall.items()},
            "ratio_cpu_1_thread": round(med["old"] / med["new_1"], 2),
            "ratio_wall_2_threads": round(wall["old"] / wall["new_2"], 2),
            "same_bits_1_and_2_threads": same}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default=str(ROOT / "data/datasets/sample-mc"))
    ap.add_argument("--epochs", type=int, default=3, help="epochs of each whole plant")
    ap.add_argument("--repeat", type=int, default=3, help="timings per part (median)")
    ap.add_argument("--whole-repeat", type=int, default=1, help="whole plants per path")
    ap.add_argument("--templates", default=str(ROOT / "data/templates"),
                    help="as plant's --templates ('' for label forms)")
    ap.add_argument("--width", type=int, default=None, help="default: params.yaml's")
    ap.add_argument("--vocab-size", type=int, default=None, help="default: params.yaml's")
    ap.add_argument("--block", type=int, default=None, help="default: params.yaml's")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)      # torch on one thread, as `factprobe plant` trains
    from factprobe.probes.planting.plant import lesson
    result = {"benchmark": "plant", "machine": machine(), "versions": versions(),
              "load_before": os.getloadavg()[0], "epochs": args.epochs}
    result["command"] = sys.argv
    for cfg in configs(args.dataset, args.epochs, args.templates, width=args.width,
                       vocab_size=args.vocab_size, block=args.block):
        les = lesson(cfg)
        name = "masked" if cfg.masked else "causal"
        parts = epoch_parts(les, args.repeat)
        old = parts["steps"] + parts.get("tokenise_old", parts.get("masks_old", 0)) + \
            parts["check_old"]
        new = parts["steps_new_1_cpu"] + parts.get("tokenise_new", parts.get("masks_new", 0)) \
            + parts["check_new"]
        parts["epoch_old_s"], parts["epoch_new_s"] = round(old, 3), round(new, 3)
        parts["epoch_ratio"] = round(old / new, 2)       # CPU seconds, one thread each
        parts["steps_wall_ratio_2_threads"] = round(
            parts["steps_old_wall"] / parts["steps_new_2_wall"], 2)
        result[name] = {"epoch": parts, "whole": whole(les, args.whole_repeat)}
    result["load_after"] = os.getloadavg()[0]
    emit(result, args.json)


if __name__ == "__main__":
    main()
