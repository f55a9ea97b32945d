"""The masked model's masks as drawn before issue 30 (a per-token loop over every row, in
probes/planting/masked.py until MaskTable replaced it): the reference that
tests/probes/planting/test_fast_paths.py checks MaskTable against and that
benchmarks/bench_plant.py times the old path with."""
from __future__ import annotations


def old_masks(encoded, specials, pad_id, mask_id, rng, bs):
    """Masks of ``encoded`` rows ((ids, object start, object end) each) in batches of ``bs``
    rows: every object token and 5% of the others, drawn from ``rng`` token by token; the
    batches and where the generator was left."""
    import torch
    rows = []
    for ids, lo, hi in encoded:
        target = [lo <= i < hi or (ids[i] not in specials and rng.random() < 0.05)
                  for i in range(len(ids))]
        rows.append((ids, target))
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    out = []
    for i in range(0, len(rows), bs):
        chunk = rows[i:i + bs]
        width = max(len(r[0]) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id)
        labels = torch.full((len(chunk), width), -100)
        attn = torch.zeros((len(chunk), width), dtype=torch.long)
        for j, (r, tgt) in enumerate(chunk):
            ids[j, :len(r)] = torch.tensor(r)
            attn[j, :len(r)] = 1
            for k, is_t in enumerate(tgt):
                if is_t:
                    labels[j, k] = r[k]
                    ids[j, k] = mask_id
        out.append((ids, attn, labels))
    return out, rng.random()                  # and where the generator was left
