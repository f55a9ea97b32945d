"""The subject-only check of a planted-model run: two scores that read the subject and nothing
else, for every planted and held-out test fact, asked of the same model in the same run.

A validity AUROC (docs/metrics/validity.md) is meant to measure the subject-object link. The
subject-blind null (probes/subject_blind.py) removes the subject and so cannot see a probe that
reads the subject alone: if held-out subjects were taught in other contexts than planted ones
(as the bare text "s." rather than in statements), how likely "." is right after a subject, or
the subject's own likelihood, separates the halves with no link at all, and an estimator built
on such a signal (confidence, entropy) would pass the validity check without measuring
knowledge. So every planted-model run of a model that scores text also asks:

- ``period_after_subject``: log P("." | subject), the subject at a text's start;
- ``subject_likelihood``: the subject's own mean token log-probability, at a text's start
  (after the model's start token).

A masked model (BELIEF's) scores no continuation; it is asked the mask-filling equivalents
(capability ``mask_each``, probes/requests.py), each the log-probability of a token masked
where it stands, the rest of the text in view:

- ``period_after_subject``: log P("." at the mask | "subject[MASK]"), the text "subject."
  with its "." masked: the mask right after the subject, no space (WordPiece reads "subject
  [MASK]" as the same tokens; a byte-level BPE model would read a space before the mask as
  part of a " ." token, which no sentence ends with);
- ``subject_likelihood``: the subject's pseudo-log-likelihood (Salazar et al., 2020, *Masked
  Language Model Scoring*, ACL): each of its tokens masked in turn in the text "subject" (the
  model's start and end tokens around it, as it reads every text), their mean log-probability.

Their AUROCs between the halves should be 0.5. The rows have ``stage = "subject_only"``, so
every method's metrics, which read their own stages, never see them.
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import MaskRequest, ScoreRequest
from factprobe.probes.subject_blind import blind_ids

STAGE = "subject_only"
SCORES = ("period_after_subject", "subject_likelihood")


def subject_requests(facts: pd.DataFrame, planted: dict,
                     examples: frozenset[str] = frozenset()) -> list[ScoreRequest]:
    """Two requests per planted or held-out test fact (not one the probe only shows as an
    example, Plan.examples_only), in fact order.

    >>> facts = pd.DataFrame({"fact_id": ["a", "b"], "relation_id": ["r", "r"],
    ...                       "subject": ["Oslo", "Lima"], "split": ["test", "test"]})
    >>> [(r.context, r.continuations, r.meta["subject_score"])
    ...  for r in subject_requests(facts, {"planted": ["a"], "held_out": []})]
    [('Oslo', ('.',), 'period_after_subject'), ('', (' Oslo',), 'subject_likelihood')]
    """
    hit = blind_ids(facts, planted, examples).to_numpy()
    out = []
    for row, h in zip(facts.itertuples(index=False), hit):
        if not h:
            continue
        meta = {"fact_id": row.fact_id, "relation_id": row.relation_id}
        out.append(ScoreRequest(str(row.subject), (".",), group=STAGE,
                                meta={**meta, "subject_score": SCORES[0]},
                                option_meta=({"option": 0},)))
        out.append(ScoreRequest("", (" " + str(row.subject),), group=STAGE,
                                meta={**meta, "subject_score": SCORES[1]},
                                option_meta=({"option": 0},)))
    return out


def masked_requests(facts: pd.DataFrame, planted: dict,
                    examples: frozenset[str] = frozenset()) -> list[MaskRequest]:
    """The mask-filling equivalents: two requests per planted or held-out test fact.

    >>> facts = pd.DataFrame({"fact_id": ["a"], "relation_id": ["r"], "subject": ["Oslo"],
    ...                       "split": ["test"]})
    >>> [(r.prompt, r.mask_each_from, r.meta["subject_score"])
    ...  for r in masked_requests(facts, {"planted": ["a"], "held_out": []})]
    [('Oslo.', 4, 'period_after_subject'), ('Oslo', 0, 'subject_likelihood')]
    """
    hit = blind_ids(facts, planted, examples).to_numpy()
    out = []
    for row, h in zip(facts.itertuples(index=False), hit):
        if not h:
            continue
        meta = {"fact_id": row.fact_id, "relation_id": row.relation_id}
        subject = str(row.subject)
        out.append(MaskRequest(subject + ".", top_k=0, mask_each_from=len(subject),
                               meta={**meta, "subject_score": SCORES[0]}))
        out.append(MaskRequest(subject, top_k=0, mask_each_from=0,
                               meta={**meta, "subject_score": SCORES[1]}))
    return out


def with_subject_only(plan: Plan, facts: pd.DataFrame, planted: dict,
                      capabilities: frozenset[str] = frozenset({"score"})) -> Plan:
    """``plan`` with the subject-only stage appended: scored continuations for a method that
    reads a model that scores text, the mask-filling equivalents for one that fills masks
    (BELIEF), each only where the backend (``capabilities``) can answer them; ``plan``
    itself when it cannot or no fact is planted or held out.

    >>> facts = pd.DataFrame({"fact_id": ["a"], "relation_id": ["r"], "subject": ["Oslo"],
    ...                       "split": ["test"]})
    >>> masked = Plan("belief", [Stage("prompts", "fill_mask")])
    >>> half = {"planted": ["a"], "held_out": []}
    >>> sorted(with_subject_only(masked, facts, half, frozenset({"fill_mask", "mask_each"}))
    ...        .needs())
    ['fill_mask', 'mask_each']
    >>> with_subject_only(masked, facts, half, frozenset({"fill_mask"})) is masked
    True
    """
    if "fill_mask" in plan.needs():
        if not {"fill_mask", "mask_each"} <= capabilities:
            return plan
        kind, reqs = "fill_mask", masked_requests(facts.drop_duplicates("fact_id"), planted,
                                                  plan.examples_only)
    elif "score" in capabilities:
        kind, reqs = "score", subject_requests(facts.drop_duplicates("fact_id"), planted,
                                               plan.examples_only)
    else:
        return plan
    if not reqs:
        return plan
    return replace(plan, stages=[*plan.stages, Stage(STAGE, kind, reqs)],
                   info=plan.info | {STAGE: {"facts": len(reqs) // 2,
                                             "requests": len(reqs)}})


def subject_scores(outputs: pd.DataFrame) -> pd.DataFrame:
    """One row per fact with ``period_after_subject`` (the "." log-prob) and
    ``subject_likelihood`` (the subject's mean token log-prob); empty without such rows.

    A score over no token is missing, not 0: a subject that ends in "." ("Martin Luther King
    Jr.") takes the "." into its own last token, and the sum over the empty rest would read as
    certainty (log P = 0) for that fact alone.

    >>> rows = pd.DataFrame({"stage": [STAGE] * 4, "fact_id": ["a", "a", "b", "b"],
    ...                      "relation_id": ["r"] * 4, "subject_score": list(SCORES) * 2,
    ...                      "token_logprobs": [[-0.5], [-1.0, -3.0], [], [-2.0]]})
    >>> subject_scores(rows).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'relation_id': 'r', 'fact_id': 'a', 'period_after_subject': -0.5, 'subject_likelihood': -2.0},
     {'relation_id': 'r', 'fact_id': 'b', 'period_after_subject': nan, 'subject_likelihood': -2.0}]
    """
    cols = ["relation_id", "fact_id", *SCORES]
    if "stage" not in outputs.columns or "subject_score" not in outputs.columns:
        return pd.DataFrame(columns=cols)
    rows = outputs[outputs["stage"] == STAGE]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    vals = [float("nan") if not len(lp) else float(sum(lp) / len(lp)) if s == SCORES[1]
            else float(sum(lp)) for s, lp in zip(rows["subject_score"], rows["token_logprobs"])]
    wide = rows.assign(v=vals).pivot_table(index=["relation_id", "fact_id"],
                                           columns="subject_score", values="v",
                                           aggfunc="first", dropna=False)
    wide = wide.reset_index()
    wide.columns.name = None
    return wide.reindex(columns=cols)
