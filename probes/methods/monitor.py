"""MONITOR (Wang et al., Sec. 4): how stable a model's answer is across paraphrases and
misleading context, measured on the probabilities of one anchor answer.

For a fact with base question "What is the capital of France?", gold Paris, negative Rome,
in the paper's frames (its Table 1, templates 2, 4 and 5: the question alone, no answer cue)::

    positive:   "Paris. What is the capital of France?"     -> greedy anchor " Paris"
    paraphrase: "Which city is France's seat of power?"      -> P(anchor's object tokens)  (R)
    negative:   "Rome. What is the capital of France?"       -> P(anchor's object tokens)  (M)

A fact counts only if the anchor equals the gold after trimming punctuation (the paper's Exact
Match). Its anchor is the object's subwords only (Eq. 1: L_c counts the object's subwords),
never a trailing "." the model adds. The stages:

- ``anchor``: greedy answer to the positive prompt;
- ``frames``: greedy answers for the accuracy the paper sets MONITOR against (Sec. 4.3: the
  R x M frame-context combinations "{y-_m}. Q_j(x)"; ``accuracy="monitor"`` asks the R + M
  prompts MONITOR itself reads instead);
- ``object``: the object's tokens scored under the positive prompt, P(o | s, r, i+)_l, for
  every fact whose anchor matched;
- ``foreign``: the same tokens under every paraphrase and negative prompt (teacher-forced), or,
  with ``compat``, read from free-running greedy generation under each prompt as the authors'
  code does.

The paraphrase set is every question of the relation, the base included: the paper's seven
prompt frames of a relation are the base question and six paraphrases of it (Appendix A.1).

A dataset built with ``build fktc --frame statement`` (its templates table's ``frame`` column
says ``statement``) poses cloze statements instead, cut before ``[Y]``: the paper's
word-prediction frame (Table 1, frame 1), "Paris. The capital of France is" -> " Paris".
"""
from __future__ import annotations

import argparse
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factprobe.core.argtypes import positive
from factprobe.core.errors import UserError
from factprobe.builders.templates.files import Template, fill, question_text, y_is_last
from factprobe.probes.methods.multiprompt_in import templates_of
from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pandas as pd

# the request meta columns holding integers (outputs.parquet keeps them integers)
INTEGER_COLUMNS = ("index", "negative", "n_paraphrases", "n_negatives")
ACCURACY = ("combinations", "monitor")
ANCHOR_MATCH = ("exact", "prefix")


@dataclass(frozen=True)
class MonitorConfig:
    compat: bool = False
    max_new_tokens: int = 10
    frames: bool = True               # greedy answers for the accuracy (frame accuracies)
    # Text after every question. The paper's frames (Table 1) end with the question: "".
    answer_suffix: str = ""
    # combinations: the R x M prompts "{y-_m}. Q_j(x)" (Sec. 4.3); monitor: the R + M prompts
    # MONITOR reads (paraphrases alone, negatives before the base question).
    accuracy: str = "combinations"
    # exact: the paper's Exact Match (Sec. 4), the anchor and the gold trimmed of whitespace
    # and punctuation around them are equal; prefix: the anchor starts with the gold on a word
    # boundary (a base model that keeps writing after the answer keeps the fact), as frame
    # accuracy reads
    anchor_match: str = "exact"


def prompt(question: str, prefix: str = "", suffix: str = "") -> str:
    """
    >>> prompt("What is the capital of France?", "Rome. ")
    'Rome. What is the capital of France?'
    >>> prompt("What is the capital of France?", suffix="\\nAnswer:")
    'What is the capital of France?\\nAnswer:'
    """
    return f"{prefix}{question}{suffix}"


def trimmed(text: str) -> str:
    """
    >>> trimmed(" Paris.")
    'Paris'
    """
    return text.strip().strip(string.punctuation + " ").strip()


def anchor_ok(text: str, gold: str, rule: str = "exact") -> bool:
    """Whether a primary anchor is the gold. ``exact`` (the paper's Exact Match, Sec. 4):
    the anchor and the gold, each trimmed of whitespace and punctuation at both ends, are
    equal, case and inner text as they are. ``prefix``: the trimmed anchor starts with the
    trimmed gold, then ends or goes on after a character that is not a letter or digit.
    Both sides are trimmed alike: a gold that ends in punctuation ("Washington, D.C.",
    "Apple Inc.") is its own anchor.

    >>> anchor_ok(" Paris.", "Paris"), anchor_ok(" Paris, France", "Paris")
    (True, False)
    >>> anchor_ok(" Paris, France", "Paris", "prefix"), anchor_ok(" Parisian", "Paris", "prefix")
    (True, False)
    >>> anchor_ok(" Washington, D.C.", "Washington, D.C.")
    True
    >>> anchor_ok(" Apple Inc. makes", "Apple Inc.", "prefix")
    True
    """
    t, g = trimmed(str(text or "")), trimmed(str(gold or ""))
    if t == g:
        return bool(g)
    if rule == "prefix":
        return bool(g) and t.startswith(g) and not t[len(g)].isalnum()
    return False


def object_span(text: str, gold: str) -> str:
    """The object as the anchor wrote it: its leading whitespace, then the gold, without the
    punctuation around it (the anchor's L counts the object's subwords only, Eq. 1).

    >>> object_span(" Paris.", "Paris"), object_span("Paris", "Paris")
    (' Paris', 'Paris')
    """
    return text[:len(text) - len(text.lstrip())] + gold


def plan(facts: pd.DataFrame, templates: list[Template], cfg: MonitorConfig) -> Plan:
    if "negatives" not in facts.columns:
        raise UserError("MONITOR needs a facts table with negatives: build it with "
                        "'factprobe build fktc'")
    if cfg.anchor_match not in ANCHOR_MATCH:
        raise UserError(f"anchor match {cfg.anchor_match!r}: use one of "
                        f"{', '.join(ANCHOR_MATCH)}")
    if cfg.accuracy not in ACCURACY:
        raise UserError(f"accuracy {cfg.accuracy!r}: use one of {', '.join(ACCURACY)}")
    questions: dict[str, list[Template]] = {}
    base: dict[str, Template] = {}
    for t in templates:
        # a question without its subject asks the same thing of every fact
        if not posed(t) or question_text(t.template).count("[X]") != 1:
            continue
        questions.setdefault(t.relation_id, []).append(t)
        if getattr(t, "is_base", False):
            base[t.relation_id] = t
    for rel, qs in questions.items():
        base.setdefault(rel, qs[0])
    sfx = cfg.answer_suffix
    per_fact = {}
    anchors, frames = [], []
    skipped = sorted(set(facts["relation_id"]) - set(questions))
    for row in facts.itertuples(index=False):
        if row.relation_id not in questions:
            continue
        q0 = fill(question_text(base[row.relation_id].template), row.subject)
        meta = {"fact_id": row.fact_id, "relation_id": row.relation_id, "gold": row.object}
        qs = [(t.template_id, fill(question_text(t.template), row.subject))
              for t in questions[row.relation_id]]
        negatives = list(row.negatives)
        positive_prompt = prompt(q0, f"{row.object}. ", sfx)
        paraphrases = [prompt(q, "", sfx) for _, q in qs]
        neg_prompts = [prompt(q0, f"{neg}. ", sfx) for neg in negatives]
        per_fact[row.fact_id] = (meta, positive_prompt, paraphrases, neg_prompts)
        anchors.append(GenerateRequest(positive_prompt, cfg.max_new_tokens, stop=("\n",),
                                       meta={**meta, "frame": "positive", "index": 0}))
        if not cfg.frames:
            continue
        if cfg.accuracy == "combinations":
            for j, (tid, q) in enumerate(qs):
                for m, neg in enumerate(negatives):
                    frames.append(GenerateRequest(
                        prompt(q, f"{neg}. ", sfx), cfg.max_new_tokens, stop=("\n",),
                        meta={**meta, "frame": "combination", "index": j, "negative": m,
                              "template_id": tid}))
        else:
            for j, ((tid, _), text) in enumerate(zip(qs, paraphrases)):
                frames.append(GenerateRequest(text, cfg.max_new_tokens, stop=("\n",), meta={
                    **meta, "frame": "paraphrase", "index": j, "template_id": tid}))
            for m, text in enumerate(neg_prompts):
                frames.append(GenerateRequest(text, cfg.max_new_tokens, stop=("\n",), meta={
                    **meta, "frame": "negative", "index": m, "negative": m}))

    def matched(outputs: pd.DataFrame):
        got = outputs[outputs["stage"] == "anchor"]
        for a in got.itertuples(index=False):
            if anchor_ok(a.text, a.gold, cfg.anchor_match) and len(a.token_ids) > 0:
                yield a

    def objects(outputs: pd.DataFrame) -> list:
        # P(o | s, r, i+)_l: the object's own tokens under the positive prompt
        reqs = []
        for a in matched(outputs):
            meta, positive_prompt, paraphrases, neg_prompts = per_fact[a.fact_id]
            # R and M ride along so the metrics can tell an incomplete foreign stage
            reqs.append(ScoreRequest(positive_prompt, (object_span(a.text, a.gold),),
                                     meta={**meta, "frame": "positive", "index": 0,
                                           "n_paraphrases": len(paraphrases),
                                           "n_negatives": len(neg_prompts)},
                                     option_meta=({"option": 0, "is_gold": True},)))
        return reqs

    def foreign(outputs: pd.DataFrame) -> list:
        length = {}
        if cfg.compat:
            obj = outputs[outputs["stage"] == "object"]
            length = dict(zip(obj["fact_id"], obj["n_tokens"]))
        reqs = []
        for a in matched(outputs):
            meta, _, paraphrases, neg_prompts = per_fact[a.fact_id]
            span = object_span(a.text, a.gold)
            frames_ = [("paraphrase", j, t) for j, t in enumerate(paraphrases)] + \
                      [("negative", m, t) for m, t in enumerate(neg_prompts)]
            for frame, idx, text in frames_:
                fm = {**meta, "frame": frame, "index": idx}
                if cfg.compat:
                    # the anchor's first L generated tokens, L = the object's subwords
                    ids = tuple(int(i) for i in a.token_ids)[:int(length.get(a.fact_id, 0))]
                    if ids:
                        reqs.append(GenerateRequest(text, len(ids), watch=ids, meta=fm))
                else:
                    reqs.append(ScoreRequest(text, (span,), meta=fm,
                                             option_meta=({"option": 0, "is_gold": True},)))
        return reqs

    stages = [Stage("anchor", "generate", anchors)]
    if frames:
        stages.append(Stage("frames", "generate", frames))
    stages.append(Stage("object", "score", build=objects))
    stages.append(Stage("foreign", "generate" if cfg.compat else "score", build=foreign,
                        needs=frozenset({"watch"}) if cfg.compat else frozenset()))
    return Plan("monitor", stages, {"facts": len(per_fact), "relations_without_questions":
                                    skipped},
                skipped={r: "no question template with one [X]" for r in skipped},
                integer_columns=INTEGER_COLUMNS)


def posed(t: Template) -> bool:
    """Whether MONITOR poses a template: a question, or a statement an FKTC dataset built with
    ``--frame statement`` marks as its frame and whose ``[Y]`` is last (cut there, the model
    completes it). A statement of any other dataset stays unposed, as it always was.

    >>> posed(Template("r/q", "r", "Where is [X]? [Y].", "question"))
    True
    >>> posed(Based(Template("r/s", "r", "[X] is in [Y].", "statement"), False))
    False
    >>> posed(Based(Template("r/s", "r", "[X] is in [Y].", "statement"), False, "statement"))
    True
    """
    if t.style == "question":
        return True
    return (t.style == "statement" and getattr(t, "frame", "") == "statement"
            and y_is_last(t.template))


class Based:
    """A template with FKTC's ``is_base`` flag (the base question of its relation) and its
    ``frame`` (``statement`` for a dataset of cloze statements)."""

    def __init__(self, template, is_base: bool, frame: str = ""):
        self._t, self.is_base, self.frame = template, is_base, frame

    def __getattr__(self, name):
        return getattr(self._t, name)


def plan_tables(tables: dict[str, pd.DataFrame], cfg: MonitorConfig) -> Plan:
    table = tables["templates"]
    records = table.to_dict("records")
    flags = [bool(r.get("is_base", False)) for r in records]
    frames = [str(r.get("frame") or "") for r in records]
    return plan(tables["facts"], [Based(t, b, f) for t, b, f in
                                  zip(templates_of(table), flags, frames)], cfg)


# ----------------------------------------------------------------------- command line

def suffix_text(value: str) -> str:
    r"""``--answer-suffix``: the text after every question, with ``\n`` for a line break.

    >>> suffix_text(r"\nAnswer:")
    '\nAnswer:'
    """
    return value.replace("\\n", "\n")


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("MONITOR")
    g.add_argument("--compat", action="store_true",
                   help="free-running foreign anchors, as the authors' code")
    g.add_argument("--max-new-tokens", type=positive, default=10)
    g.add_argument("--no-frames", action="store_true",
                   help="skip the greedy answers for the frame accuracies")
    g.add_argument("--answer-suffix", type=suffix_text, default="", metavar="TEXT",
                   help="text after every question, \\n for a line break (default: none, as the "
                        "paper's Table 1 frames; earlier factprobe versions used "
                        "'\\nAnswer:')")
    g.add_argument("--accuracy-prompts", choices=ACCURACY, default="combinations",
                   help="prompts of the frame accuracies: every frame-context combination "
                        "'{negative}. {paraphrase}' (R x M, the paper's Sec. 4.3; default) or "
                        "the R + M prompts MONITOR reads (cheaper)")
    g.add_argument("--anchor-match", choices=ANCHOR_MATCH, default="exact",
                   help="when the primary anchor is the gold: the paper's Exact Match, "
                        "whitespace and punctuation around it trimmed (exact, default), or "
                        "the answer starts with the gold on a word boundary (prefix)")


def from_args(args: argparse.Namespace) -> MonitorConfig:
    return MonitorConfig(compat=args.compat, max_new_tokens=args.max_new_tokens,
                         frames=not args.no_frames, answer_suffix=args.answer_suffix,
                         accuracy=args.accuracy_prompts, anchor_match=args.anchor_match)


PROBE = Probe(
    name="monitor", summary="MONITOR on FKTC-style prompts",
    needs=frozenset({"score", "generate"}),
    examples="""\
  factprobe eval monitor --dataset data/datasets/sample-fktc --model data/models/planted \\
      --out data/results/sample-fktc/monitor/planted
  factprobe eval monitor --dataset fktc/ --model bigscience/bloomz-560m --compat --out r/
  factprobe eval monitor --dataset fktc/ --model m --answer-suffix '\\nAnswer:' --out r/
""",
    config=MonitorConfig, tables=("facts", "templates"), plan=plan_tables,
    add_flags=add_flags, from_args=from_args, citation="monitor",
    card=("MONITOR (Wang, Haddow, Birch and Peng, NAACL 2024): reliability of the answer "
          "distribution under paraphrased prompts and in-context interference (`factprobe eval "
          "monitor`)."),
    serves=("misprimes", "fktc", "templates"),
    pipeline=Pipeline("fktc", args="--limit 20"))
