"""Held-out facts the graph gives away (evaluators/report/tables._guess_columns): a
multiple-choice validity block records its held-out facts' accuracy by chance, and one whose
held-out facts are answered above it while its AUROC is under 0.9 is flagged in report.md
and on the page. Worked out by hand on synthesized ZP-LKE runs: 10 planted and 10 held-out
facts of one relation, 8 choices each (chance 1/8)."""
from __future__ import annotations

import pandas as pd
import pytest

from tests.evaluators import synth

PLANTED = [f"p{i}" for i in range(10)]
HELD = [f"h{i}" for i in range(10)]
CHOICES = 8
FLAG = "held-out facts answered right"


def _run(gold_and_rest) -> pd.DataFrame:
    """``gold_and_rest(fact)``: the log-probs of its gold (option 0) and of its 7 others."""
    rows = []
    for f in PLANTED + HELD:
        gold, rest = gold_and_rest(f)
        meta = {"fact_id": f, "relation_id": "r", "gold": f"g-{f}", "n_examples": 3,
                "seed": 0, "corrupted": 0, "prompt_id": f"p-{f}"}
        for k in range(CHOICES):
            lp = gold if k == 0 else rest
            rows.append({**meta, "stage": "mc", "kind": "score", "option": float(k),
                         "option_text": f" o{k}-{f}", "is_gold": k == 0,
                         "token_logprobs": [lp], "logprob": lp, "n_tokens": 1})
    return pd.DataFrame(rows)


def _report(tmp_path, name, fn):
    """The validity block, report.md and the page of one run whose facts ``fn`` scores."""
    v, md, out = synth.zp_lke_report(tmp_path / name, _run(fn),
                                     {"planted": PLANTED, "held_out": HELD})
    return v, md, (out / "index.html").read_text()


def sure(f):                  # all the mass on the gold
    return 0.0, -50.0


def test_held_out_answered_like_planted_ones_is_flagged(tmp_path):
    # 6 of 10 held-out facts as sure as planted ones (the graph gives them away): accuracy
    # 0.6, AUROC 0.4 + 0.6 / 2 = 0.7 by ties
    given_away = set(HELD[:6])
    v, md, page = _report(tmp_path, "given", lambda f: sure(f) if f in PLANTED or f in
                          given_away else (-5.0, 0.0))
    assert v["held_out_chance"] == 1 / CHOICES
    assert v["held_out"]["value"] == 0.6 and v["auroc"]["value"] == 0.7
    assert v["held_out"]["ci_low"] > 1 / CHOICES
    assert FLAG in md and "against 0.125 by chance" in md
    assert "0.600 [" in md and "] (!) |" in md          # the held-out cell carries the mark
    assert FLAG in page and '"guess_flag":"held-out' in page.replace(" ", "")   # the page's data


def test_held_out_at_chance_is_not_flagged(tmp_path):
    v, md, _ = _report(tmp_path, "taught", lambda f: sure(f) if f in PLANTED else (-5.0, 0.0))
    assert v["held_out_chance"] == 1 / CHOICES and v["held_out"]["value"] == 0.0
    assert FLAG not in md


def test_held_out_above_chance_with_a_high_auroc_is_not_flagged(tmp_path):
    # held-out facts right but unsure (gold 0, the others -1: probability 0.28), planted
    # ones sure: above chance, and the AUROC (1.0) is not capped by them
    v, md, _ = _report(tmp_path, "unsure", lambda f: sure(f) if f in PLANTED else (0.0, -1.0))
    assert v["held_out"]["value"] == 1.0 and v["held_out"]["ci_low"] > 1 / CHOICES
    assert v["auroc"]["value"] == 1.0
    assert FLAG not in md


@pytest.mark.slow                     # a browser
def test_the_page_draws_the_flag(tmp_path):
    """The page's JavaScript puts the mark on the held-out cell and the line below the table
    (headless Chromium; skipped where there is none)."""
    from tests.evaluators.report.test_report_html import _browser
    sync_playwright, exe = _browser()
    _report(tmp_path, "given", lambda f: sure(f) if f in PLANTED or f in set(HELD[:6])
            else (-5.0, 0.0))
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        pg = browser.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto((tmp_path / "given" / "rep" / "index.html").as_uri())
        pg.wait_for_selector("#validity-flags li")
        flags = pg.locator("#validity-flags").inner_text()
        cell = pg.locator('[data-validity="held_out"]').first
        held, cls = cell.inner_text(), cell.get_attribute("class")
        browser.close()
    assert not errors, errors
    assert FLAG in flags and "against 0.125 by chance" in flags
    assert held.endswith("(!)") and "bad" in cls
