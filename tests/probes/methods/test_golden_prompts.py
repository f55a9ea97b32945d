"""Golden prompts: the exact strings each probe sends to a model."""
from __future__ import annotations

import pandas as pd
import pytest

from factprobe.builders.templates.files import Template
from factprobe.probes.methods import belief, belief_icl, monitor, zp_lke
from factprobe.probes.methods import prompt as prompt_baselines


def mc_facts() -> pd.DataFrame:
    rows = []
    people = [("Albert Einstein", "1879"), ("Niels Bohr", "1885"), ("Marie Curie", "1867"),
              ("Max Planck", "1858"), ("Peter Grunberg", "1939")]
    for i, (s, o) in enumerate(people):
        rows.append({"fact_id": f"f{i}", "relation_id": "born", "subject_id": f"s{i}",
                     "object_id": o, "subject": s, "object": o, "subject_aliases": [],
                     "object_aliases": [], "answers": [o],
                     "split": "test" if s == "Peter Grunberg" else "train",
                     "choices": ["1939", "1901", "1925"] if s == "Peter Grunberg" else []})
    return pd.DataFrame(rows)


def test_zp_lke_default_prompt():
    cfg = zp_lke.ZPLKEConfig(n_examples=(3,), response_tokens=5)
    plan = zp_lke.plan(mc_facts(), cfg)
    mc = plan.stages[0].requests
    assert len(mc) == 1
    ctx = mc[0].context
    # three of the four train facts, in a seeded order, then the test subject
    pairs = ctx.split(", ")
    assert len(pairs) == 4 and pairs[-1] == "Peter Grunberg"
    assert all(p.rsplit(" ", 1)[1].isdigit() for p in pairs[:3])
    assert mc[0].continuations == (" 1939", " 1901", " 1925")
    assert [m["is_gold"] for m in mc[0].option_meta] == [True, False, False]
    assert plan.stages[1].requests[0].prompt == ctx
    assert zp_lke.plan(mc_facts(), cfg).stages[0].requests[0].context == ctx  # seeded


def test_zp_lke_compat_prompt():
    cfg = zp_lke.ZPLKEConfig(n_examples=(2,), compat=True, response_tokens=0)
    req = zp_lke.plan(mc_facts(), cfg).stages[0].requests[0]
    train = mc_facts().query("split == 'train'")
    picked = train.sample(n=2, random_state=10)
    (x1, y1), (x2, y2) = zip(picked["subject"], picked["object"])
    assert req.context == f"{x1} : {y1} , {x2} : {y2} Peter Grunberg : "
    assert req.continuations[0] == " : 1939"


def test_zp_lke_unknown_examples_in_a_block():
    cfg = zp_lke.ZPLKEConfig(n_examples=(4,), corrupt="unknown", corrupt_count=2,
                             corrupt_layout="block", response_tokens=0)
    req = zp_lke.plan(mc_facts(), cfg).stages[0].requests[0]
    subjects = [p.rsplit(" ", 1)[0] for p in req.context.split(", ")[:-1]]
    real = set(mc_facts()["subject"])
    fake = [i for i, s in enumerate(subjects) if s not in real]
    assert len(fake) == 2 and fake[1] == fake[0] + 1
    assert req.meta["corrupted"] == 2


def test_prompt_hgp_and_fs_lke():
    tpl = [Template("born/m1", "born", "[X] was born in [Y].", "statement", "manual", ""),
           Template("born/m2", "born", "In which year was [X] born? [Y].", "question", "manual",
                    "")]
    cfg = prompt_baselines.PromptConfig(response_tokens=0)
    req = prompt_baselines.plan(mc_facts(), tpl, cfg).stages[0].requests[0]
    assert req.context == "Peter Grunberg was born in"
    assert req.continuations == (" 1939", " 1901", " 1925")
    # FS-LKE as in the paper's Table 1 ("Albert Einstein was born in 1879, Brian Kobilka was
    # born in 1955, Peter Grunberg was born in") and Fig. 6: the prompt in place of ZP-LKE's
    # subject-object separator, pairs joined by ", ", no sentence full stops
    fs = prompt_baselines.plan(mc_facts(), tpl, prompt_baselines.PromptConfig(
        fs_examples=2, response_tokens=0)).stages[0].requests[0]
    assert fs.context == ("Marie Curie was born in 1867, Albert Einstein was born in 1879, "
                          "Peter Grunberg was born in")
    assert fs.continuations == (" 1939", " 1901", " 1925")
    # the same two examples as ZP-LKE's seed-0 draw, with " " in place of the prompt
    zp = zp_lke.plan(mc_facts(), zp_lke.ZPLKEConfig(n_examples=(2,), response_tokens=0))
    assert zp.stages[0].requests[0].context == "Marie Curie 1867, Albert Einstein 1879, " \
        "Peter Grunberg"


def born_templates() -> list[Template]:
    texts = ["[X] was born in [Y].", "[X] was born in the year [Y].", "[X] is from [Y].",
             "The birth year of [X] is [Y].", "[X] came into the world in [Y]."]
    out = [Template(f"born/m{i + 1}", "born", t, "statement") for i, t in enumerate(texts)]
    out.append(Template("born/m6", "born", "In which year was [X] born? [Y].", "question"))
    out.append(Template("born/m7", "born", "[X] was born in [Y]. True or false?", "check"))
    return out


def test_prompt_draws_three_templates_per_relation():
    # Sec. 4.1: three templates per relation drawn at random; a question per (fact, template)
    plan = prompt_baselines.plan(mc_facts(), born_templates(),
                                 prompt_baselines.PromptConfig(response_tokens=0))
    contexts = {r.meta["template_id"]: r.context for r in plan.stages[0].requests}
    assert contexts == {"born/m2": "Peter Grunberg was born in the year",
                        "born/m3": "Peter Grunberg is from",
                        "born/m4": "The birth year of Peter Grunberg is"}
    assert plan.info["templates"] == {"born": ["born/m2", "born/m3", "born/m4"]}
    other = prompt_baselines.plan(mc_facts(), born_templates(), prompt_baselines.PromptConfig(
        response_tokens=0, seed=2)).info["templates"]["born"]
    assert other == ["born/m1", "born/m3", "born/m5"]     # another seed, another draw
    one = prompt_baselines.plan(mc_facts(), born_templates(), prompt_baselines.PromptConfig(
        response_tokens=0, template_id="m4")).stages[0].requests
    assert [r.context for r in one] == ["The birth year of Peter Grunberg is"]
    # a pool of two (no more statements): both, whatever the count
    two = prompt_baselines.plan(mc_facts(), born_templates()[:2], prompt_baselines.PromptConfig(
        response_tokens=0, template_count=3)).info["templates"]["born"]
    assert two == ["born/m1", "born/m2"]


def mp_facts() -> pd.DataFrame:
    return pd.DataFrame([
        {"fact_id": "a", "relation_id": "cap", "subject_id": "fr", "object_id": "par",
         "subject": "France", "object": "Paris", "subject_aliases": ["French Republic"],
         "object_aliases": ["City of Light"], "answers": ["Paris"], "split": "", "source": ""},
        {"fact_id": "b", "relation_id": "cap", "subject_id": "pe", "object_id": "lim",
         "subject": "Peru", "object": "Lima", "subject_aliases": [], "object_aliases": [],
         "answers": ["Lima"], "split": "", "source": ""}])


TPL = [Template("cap/m1", "cap", "The capital of [X] is [Y].", "statement", "manual", ""),
       Template("cap/m2", "cap", "What is the capital of [X]? [Y].", "question", "manual", ""),
       Template("cap/m3", "cap", "[Y] is the capital of [X]. True or false?", "check", "manual",
                "")]


def test_belief_prompts_and_content_free():
    plan = belief.plan(mp_facts(), TPL, belief.BeliefConfig())
    prompts = [r.prompt for r in plan.stages[0].requests]
    assert "The capital of France is [MASK]." in prompts
    assert "The capital of French Republic is [MASK]." in prompts
    assert "What is the capital of Peru? [MASK]." in prompts
    assert not any("True or false" in p for p in prompts)
    france = [r for r in plan.stages[0].requests if r.meta["subject_id"] == "fr"][0]
    assert france.candidates == ("Paris", "City of Light")
    free = {r.prompt for r in plan.stages[1].requests}
    assert "The capital of N/A is [MASK]." in free and "The capital of ? is [MASK]." in free
    assert plan.stages[1].requests[0].candidates == ("Lima", "Paris")


def test_belief_icl_prompt():
    cfg = belief_icl.BeliefICLConfig(contexts=("1-template",), samples=0)
    reqs = belief_icl.plan(mp_facts(), TPL, cfg).stages[0].requests
    france = [r for r in reqs if r.meta["subject_name"] == "France"
              and r.meta["template_id"] == "cap/m1"][0]
    assert france.prompt == ("Predict the [MASK] in each sentence in one word.\n"
                             "Q: The capital of Peru is [MASK].\nA: Lima.\n"
                             "Q: The capital of France is [MASK].\nA:")
    assert france.stop == ("\n",)
    zero = belief_icl.plan(mp_facts(), TPL, belief_icl.BeliefICLConfig(
        contexts=("zero",), style="qa", samples=0)).stages[0].requests[0]
    assert zero.prompt == ("Answer each question in one word.\n"
                           "Q: What is the capital of France?\nA:")


def test_belief_icl_samples_on_a_subset():
    cfg = belief_icl.BeliefICLConfig(contexts=("zero",), samples=7, sample_prompts=2)
    plan = belief_icl.plan(mp_facts(), TPL, cfg)
    assert len(plan.stages[1].requests) == 2
    assert all(r.samples == 7 for r in plan.stages[1].requests)


def test_belief_icl_samples_distinct_pairs_equally_per_context():
    # France: 2 names x 2 templates = 4 prompts; Peru: 1 x 2 = 2; in each context 3 sampled
    # prompts: one of each pair (the paper's "prompts from unique subject-relation pairs"),
    # then a second distinct prompt of one pair; the same three in both contexts
    cfg = belief_icl.BeliefICLConfig(contexts=("zero", "1-template"), samples=5,
                                     sample_prompts=3)
    plan = belief_icl.plan(mp_facts(), TPL, cfg)
    key = ("fact_id", "template_id", "subject_name")
    per_ctx: dict[str, list] = {}
    for r in plan.stages[1].requests:
        per_ctx.setdefault(r.meta["context"], []).append(tuple(r.meta[k] for k in key))
    assert sorted(per_ctx) == ["1-template", "zero"]
    zero, few = per_ctx["zero"], per_ctx["1-template"]
    assert len(zero) == len(set(zero)) == 3 and set(zero) == set(few)
    assert {f for f, _, _ in zero} == {"a", "b"}
    assert plan.info["sampled_per_context"] == 3
    two = belief_icl.plan(mp_facts(), TPL, belief_icl.BeliefICLConfig(
        contexts=("zero",), samples=5, sample_prompts=2)).stages[1].requests
    assert sorted(r.meta["fact_id"] for r in two) == ["a", "b"]       # one prompt per pair
    # more than there are: every prompt once per context, none twice
    every = belief_icl.plan(mp_facts(), TPL, belief_icl.BeliefICLConfig(
        contexts=("zero", "1-template"), samples=5, sample_prompts=100)).stages[1].requests
    units = [(r.meta["context"],) + tuple(r.meta[k] for k in key) for r in every]
    assert len(units) == len(set(units)) == 2 * 6


def monitor_plan(**kw):
    facts = mp_facts().assign(negatives=[["Rome", "Lima"], ["Paris"]])
    tpls = [TPL[1], Template("cap/m4", "cap", "Which city is the seat of [X]? [Y].", "question",
                             "manual", "")]
    return monitor.plan(facts, tpls, monitor.MonitorConfig(**kw))


def test_monitor_prompts_are_the_papers_frames():
    # Table 1: QA frame (2) "Which country is [X] situated?", positive (4) "[Y]. <question>",
    # negative (5) "[Y_]. <question>": the question ends the prompt, no answer cue
    plan = monitor_plan()
    assert [s.name for s in plan.stages] == ["anchor", "frames", "object", "foreign"]
    anchor = plan.stages[0].requests[0]
    assert anchor.prompt == "Paris. What is the capital of France?"
    # accuracy over the R x M frame-context combinations (Sec. 4.3): R = 2, M = 2 for France
    frames = [r.prompt for r in plan.stages[1].requests if r.meta["fact_id"] == "a"]
    assert frames == ["Rome. What is the capital of France?",
                      "Lima. What is the capital of France?",
                      "Rome. Which city is the seat of France?",
                      "Lima. Which city is the seat of France?"]
    assert len([r for r in plan.stages[1].requests if r.meta["fact_id"] == "b"]) == 2 * 1


def test_monitor_anchor_is_the_objects_tokens():
    plan = monitor_plan()
    outputs = pd.DataFrame([{"stage": "anchor", "fact_id": "a", "text": " Paris.",
                             "gold": "Paris", "token_ids": [5, 6]},
                            {"stage": "anchor", "fact_id": "b", "text": " Rome",
                             "gold": "Lima", "token_ids": [7]}])
    # P(o | s, r, i+): the object " Paris" (not " Paris.") under the positive prompt
    obj = plan.stages[2].build(outputs)
    assert [(r.context, r.continuations) for r in obj] == \
        [("Paris. What is the capital of France?", (" Paris",))]
    assert (obj[0].meta["n_paraphrases"], obj[0].meta["n_negatives"]) == (2, 2)
    foreign = plan.stages[3].build(outputs)
    assert [r.context for r in foreign] == ["What is the capital of France?",
                                            "Which city is the seat of France?",
                                            "Rome. What is the capital of France?",
                                            "Lima. What is the capital of France?"]
    assert all(r.continuations == (" Paris",) for r in foreign)


def test_monitor_compat_watches_the_objects_tokens_only():
    plan = monitor_plan(compat=True)
    outputs = pd.DataFrame([{"stage": "anchor", "fact_id": "a", "text": " Paris.",
                             "gold": "Paris", "token_ids": [5, 6], "n_tokens": 2},
                            {"stage": "object", "fact_id": "a", "text": None,
                             "gold": "Paris", "token_ids": None, "n_tokens": 1}])
    foreign = plan.stages[3].build(outputs)
    assert len(foreign) == 4 and all(r.watch == (5,) and r.max_new_tokens == 1
                                     for r in foreign)


def test_monitor_named_options_give_the_older_frames():
    plan = monitor_plan(answer_suffix="\nAnswer:", accuracy="monitor")
    assert plan.stages[0].requests[0].prompt == "Paris. What is the capital of France?\nAnswer:"
    frames = [r.prompt for r in plan.stages[1].requests if r.meta["fact_id"] == "a"]
    assert frames == ["What is the capital of France?\nAnswer:",
                      "Which city is the seat of France?\nAnswer:",
                      "Rome. What is the capital of France?\nAnswer:",
                      "Lima. What is the capital of France?\nAnswer:"]


def test_monitor_needs_negatives():
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="negatives"):
        monitor.plan(mp_facts(), TPL, monitor.MonitorConfig())
