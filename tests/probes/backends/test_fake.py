"""The ``fake`` backend kind: the same numbers from the same seed and request, every capability,
every method end to end through ``factprobe eval --backend fake`` (no model, no torch), and
the refusal of a kind that lacks what a method needs, before any model loads."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from factprobe.cli.app import main
from factprobe.probes.backends import KINDS
from factprobe.probes.backends.fake import CAPABILITIES, FakeBackend, FakeConfig
from factprobe.probes.requests import MASK, GenerateRequest, MaskRequest, ScoreRequest
from tests.planted.conftest import TEMPLATES, build_world

# Each method on the planted world's datasets, with the flags tests/planted uses.
METHODS = {
    "zp-lke": ("mc", ("--examples", "8", "--seeds", "0")),
    "prompt": ("mc", ("--templates", str(TEMPLATES))),
    "belief": ("multiprompt", ("--max-names", "1")),
    "belief-icl": ("multiprompt", ("--max-names", "1", "--contexts", "zero,4-template",
                                   "--samples", "3", "--sample-prompts", "20")),
    "monitor": ("fktc", ()),
}
# The headline each method's metrics.json must hold strictly between 0 and 1.
HEADLINE = {"zp-lke": ("accuracy_at_k", "0.0", "value"), "prompt": ("accuracy_at_k", "0.0", "value"),
            "belief": ("accuracy", "macro"), "belief-icl": ("contexts", "zero", "accuracy", "macro"),
            "monitor": ("anchor_match", "macro")}


def _requests():
    score = [ScoreRequest(f"{c} is in", (" Europe", " South America", " Asia"))
             for c in ("France", "Peru", "Japan")]
    ids = [ScoreRequest("France is in", (), continuation_ids=((5, 6), (7,)))]
    gen = [GenerateRequest(f"The capital of {c} is", 4, meta={"gold": g}, stop=("\n",))
           for c, g in (("France", "Paris"), ("Peru", "Lima"), ("Japan", "Tokyo"),
                        ("Chile", "Santiago"), ("Kenya", "Nairobi"), ("Spain", "Madrid"))]
    sampled = [GenerateRequest("The capital of Peru is", 3, samples=4, seed=1,
                               meta={"gold": "Lima"})]
    watch = [GenerateRequest("The capital of Peru is", 3, watch=(11, 12, 13))]
    mask = [MaskRequest(f"The capital of France is {MASK}.", top_k=5,
                        candidates=("Paris", "Lyon", "New York"))]
    return score, ids, gen, sampled, watch, mask


def _answers(seed: int):
    backend = FakeBackend(FakeConfig("fake", seed))
    score, ids, gen, sampled, watch, mask = _requests()
    return (backend.score(score + ids), backend.generate(gen + sampled + watch),
            backend.fill_mask(mask))


def test_same_seed_same_numbers_another_seed_others():
    assert repr(_answers(0)) == repr(_answers(0))
    assert repr(_answers(0)) != repr(_answers(1))
    # one request alone or in a batch: the same numbers (they depend on its content only)
    backend = FakeBackend(FakeConfig("fake"))
    score = _requests()[0]
    assert repr(backend.score(score[1:2])) == repr(backend.score(score)[1:2])


def test_every_capability():
    assert KINDS["fake"].capabilities == CAPABILITIES
    scored, generated, masked = _answers(0)
    for options in scored[:3]:
        assert len(options) == 3
        assert all(s.logprob < 0 and len(s.token_ids) == len(s.token_logprobs) for s in options)
        assert len(options[1].token_ids) == 2                # " South America": two words
    assert [s.token_ids for s in scored[3]] == [[5, 6], [7]]  # token_ids: the ids given
    greedy, sampled, watched = generated[:6], generated[6], generated[7]
    golds = ["Paris", "Lima", "Tokyo", "Santiago", "Nairobi", "Madrid"]
    hits = [g.text.strip(" .") == gold for [g], gold in zip(greedy, golds)]
    assert any(hits) and not all(hits)                        # sometimes the gold, not always
    for [g] in greedy:
        assert "\n" not in g.text and 0 < len(g.token_ids) <= 4
        assert len(g.token_logprobs) == len(g.token_ids)
    assert len(sampled) == 4                                  # samples: one text each
    [w] = watched
    assert len(w.watched_logprobs) == 3 and all(x < 0 for x in w.watched_logprobs)
    [m] = masked
    assert len(m.top_tokens) == 5 and m.top_probs == sorted(m.top_probs, reverse=True)
    assert 0 < sum(m.top_probs) <= 1
    assert m.candidate_tokens[:2] == ["Paris", "Lyon"] and m.candidate_tokens[2] is None
    assert math.isnan(m.candidate_probs[2]) and 0 < m.candidate_probs[0] < 1


def test_it_says_it_is_fake():
    backend = FakeBackend(FakeConfig("anything", seed=7))
    described = backend.describe()
    assert described["model"]["type"] == "fake" and described["backend"]["seed"] == 7
    assert backend.identity() != FakeBackend(FakeConfig("anything", seed=8)).identity()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    return build_world(tmp_path_factory.mktemp("fake-world"))


def _eval(method: str, world: dict, out: Path, *extra: str) -> int:
    dataset, args = METHODS[method]
    return main(["eval", method, "--backend", "fake", "--model", "fake", "--dataset",
                 str(world[dataset]), "--out", str(out), "--quiet", *args, *extra])


def _value(metrics: dict, path: tuple[str, ...]) -> float:
    for key in path:
        metrics = metrics[key]
    return metrics


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_runs_on_the_fake_backend(method, world, tmp_path):
    assert _eval(method, world, tmp_path / "a") == 0
    assert _eval(method, world, tmp_path / "b") == 0
    for name in ("outputs.parquet", "prompts.parquet", "metrics.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["model"]["type"] == "fake" and run["backend"] == {"model": "fake", "seed": 0}
    assert run["threads"] is None                       # no torch: no thread choice
    value = _value(json.loads((tmp_path / "a" / "metrics.json").read_text()), HEADLINE[method])
    assert 0 < value < 1, value                          # neither all wrong nor all right
    assert _eval(method, world, tmp_path / "c", "--fake-seed", "1") == 0
    assert (tmp_path / "c" / "outputs.parquet").read_bytes() != \
        (tmp_path / "a" / "outputs.parquet").read_bytes()


def test_a_fake_run_imports_no_torch(world, tmp_path):
    code = ("import sys\nfrom factprobe.cli.app import main\n"
            f"assert main({['eval', 'zp-lke', '--backend', 'fake', '--model', 'fake', '--quiet', '--dataset', str(world['mc']), '--out', str(tmp_path / 'run'), '--examples', '4']!r}) == 0\n"
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "metrics.json").is_file()


@pytest.mark.parametrize("argv, line", [
    (("eval", "belief", "--backend", "hf-causal"),
     "factprobe: error: belief: this method needs a backend that can fill_mask; backend kind "
     "'hf-causal' offers generate, score, token_ids, watch"),
    (("eval", "zp-lke", "--backend", "hf-masked"),
     "factprobe: error: zp-lke: this method needs a backend that can generate, score; backend "
     "kind 'hf-masked' offers fill_mask, mask_each"),
    (("eval", "zp-lke", "--backend", "fake", "--dtype", "float16"),
     "factprobe: error: --dtype is an option of backend kind hf-causal and hf-masked; "
     "--backend fake does not take it"),
    (("eval", "zp-lke", "--backend", "fake", "--threads", "2"),
     "factprobe: error: --threads sets torch's threads, which backend kind fake does not use "
     "(only hf-causal and hf-masked); drop it"),
    (("eval", "zp-lke", "--fake-seed", "1"),
     "factprobe: error: --fake-seed is an option of backend kind fake; --backend hf-causal "
     "does not take it"),
])
def test_a_kind_that_cannot_is_refused_before_any_model_loads(argv, line, world, tmp_path,
                                                             capsys):
    dataset, args = METHODS[argv[1]]
    # the model folder does not exist: a refusal after trying to load it would say so
    code = main([*argv, "--model", str(tmp_path / "no-such-model"), "--dataset",
                 str(world[dataset]), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and err == line + "\n"
    assert not (tmp_path / "out").exists()
