# evaluators/metrics/zp_lke.py gains this function (the module imports pandas as pd)
def top_k_accuracy(scores: pd.DataFrame, k: int = 2) -> float:
    """Share of questions whose gold option has one of the ``k`` highest log-probabilities.

    >>> top_k_accuracy(pd.DataFrame({"fact_id": ["a", "a", "a"], "option": [0, 1, 2],
    ...                              "is_gold": [False, True, False],
    ...                              "logprob": [-1.0, -2.0, -3.0]}), k=1)
    0.0
    """
    question = [c for c in ("fact_id", "seed", "n_examples", "template_id") if c in scores]
    rank = scores.groupby(question)["logprob"].rank(ascending=False, method="min")
    return float((rank[scores["is_gold"].astype(bool)] <= k).mean())
