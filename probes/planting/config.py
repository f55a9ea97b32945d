"""What ``factprobe plant`` is configured with. A plain dataclass in a module of its own, so
that building the command line's parser (which shows the defaults in ``--help``) imports
neither torch nor pandas; :mod:`.plant` trains with it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlantConfig:
    dataset: str
    out: str
    seed: int = 0
    arch: str = "llama"               # rotary positions: cheaper here than GPT-2's, and robust
    layers: int = 2
    width: int = 128
    heads: int = 4
    # Room for (nearly) every word of the entity names: a name of one or two tokens is
    # memorised faster than one split into letters (docs/planting.md, measured). None: 6000,
    # or 2000 with --masked, whose one-word objects are whole tokens anyway
    vocab_size: int | None = None
    # tokens per training sequence (documents are packed); None: sized from the graph
    # (plant.fit_block: 256, halved while an epoch's text fills fewer than 4 steps)
    block: int | None = None
    epochs: int | None = None         # a fixed count; None: the stopping rule decides
    max_epochs: int | None = None     # the stopping rule's cap; None: 60 causal, 40 masked
    target_accuracy: float = 0.95     # planted-fact teacher-forced accuracy that ends training
    check_facts: int = 150            # planted facts the stopping rule asks each epoch
    warmup_steps: int = 20
    # AdamW's weight decay and the share of the cap over which the rate decays (causal.py);
    # None: the causal model's measured settings (docs/planting.md), the masked one's 0.01, 0
    weight_decay: float | None = None
    decay_share: float | None = None
    # the epochs the rate schedule spans (its decay is the last decay_share of them), apart
    # from the cap: a higher --max-epochs continues the same run at the schedule's end rate;
    # None: the default cap (60 causal, 40 masked), whatever --max-epochs says
    schedule_epochs: int | None = None
    hold_out_formats: str = ""        # frames never taught (curriculum.FORMATS), comma list
    partial_share: float = 1 / 3      # planted test facts taught in only some MONITOR frames
    # how held-out subjects are taught (curriculum.MENTION_MODES): "swap" puts them in their
    # own relation's frames before another held-out fact's gold, so neither the object's
    # familiarity nor how sure the model is of what follows a subject tells the halves apart
    # (docs/planting.md, measured on four published releases)
    mentions: str = "swap"
    lists_per_relation: int = 8       # ZP-LKE-style lists per relation and epoch
    list_size: int = 50               # pairs per list: as many as the probe shows
    # small batches: more optimizer steps per epoch of text. None: 4 blocks, or with
    # --masked sized from the graph (plant.fit_masked_batch: 8 x 16 statements, halved while
    # an epoch fills fewer than 16 steps)
    batch_size: int | None = None
    # each step's gradient is the sum of this many micro-batches', each a one-thread run of
    # its own (causal.Gradients): the bytes depend on this number, never on the threads
    # that ran the parts, so a second core speeds training up without changing a bit
    micro_batches: int = 2
    # None: 0.005, or 0.002 with --masked. The masked model on the causal model's settings
    # (0.005, vocab 6000, batch 4) stalled at 0.25 after 40 epochs on 400 real T-REx facts
    # where these converge in 13 (docs/planting.md, "Real T-REx facts")
    lr: float | None = None
    templates: str = "data/templates"  # statement and question forms; label forms if absent
    masked: bool = False               # a BERT-style masked LM instead (for BELIEF)
    threads: int | None = None         # micro-batch threads; None: follow the load (no bit changes)
    progress: bool = True
