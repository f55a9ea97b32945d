"""The prose of the dataset card, per kind of dataset: what it is, why it was built this way,
who annotated it, what it says about people, its biases and limits. Facts of the build (counts,
parameters) come from the manifest; nothing here claims what the manifest does not record."""
from __future__ import annotations

import json
from typing import Any, Mapping

from factprobe.core.markdown import code

_TEMPLATES_NOTE = ("Templates are hand-written (`origin` `manual`) or machine paraphrases "
                   "(`origin` `llm:<model>`) kept by automatic filters and, where a review file "
                   "was given, by a person.")


def _counts(manifest: Mapping[str, Any]) -> dict:
    return dict(manifest.get("counts") or {})


def _params(manifest: Mapping[str, Any]) -> dict:
    return dict(manifest.get("params") or {})


def summary(manifest: Mapping[str, Any]) -> str:
    kind, params, counts = manifest.get("kind"), _params(manifest), _counts(manifest)
    if kind == "mc":
        n = params.get("choices")
        chance = counts.get("chance")
        return (f"Multiple-choice questions built with the construction of T-REx-MC (Wu et al., "
                f"WSDM 2025). Each row asks for the object of one (subject, relation) pair and "
                f"has {n} choices in `choices`: the gold answer (`object`) exactly once, at a "
                f"random position, and {n - 1 if isinstance(n, int) else 'the other'} "
                f"distractors drawn from the other objects of the same relation, never another "
                f"correct answer of the subject (`answers`). Chance accuracy is 1/{n}"
                + (f" = {chance:g}." if isinstance(chance, (int, float)) else "."))
    if kind == "nobel":
        return (f"Nobel laureates up to {params.get('max_year', 'the last year built')} with "
                f"birth year, award years, fields and gender (`laureates`), and one birth-year "
                f"fact per laureate (`facts`): the ZP-LKE paper's Nobel dataset (App. A.1).")
    if kind == "facts":
        return ("Facts (subject, relation, object) from a knowledge graph, one row per unique "
                "triple, with preferred labels, other names (`subject_aliases`, "
                "`object_aliases`) and every correct object of the (subject, relation) pair in "
                "`answers`, so a probe can accept any of them.")
    if kind == "misprimes":
        return (f"The facts of a facts dataset with a `negatives` column: per fact up to "
                f"{params.get('negatives', 'N')} object labels of the same relation that are none "
                f"of the subject's answers, in random order: the wrong answers that MONITOR "
                f"(Wang et al., NAACL 2024) puts in front of a question as negative in-context "
                f"interference.")
    if kind == "multiprompt":
        stats = counts.get("statistics") or {}
        return (f"A multi-prompt probing set built with the construction of MyriadLAMA (BELIEF, "
                f"Zhao et al. 2024): the unique facts with both sides' aliases (`facts`) and the "
                f"templates of their relations (`templates`). Every (subject, relation) pair is "
                f"asked with every template and every name of the subject: "
                f"{stats.get('prompts', 'see the counts for the number of')} prompts for "
                f"{stats.get('unique_triples', 'the')} facts and {stats.get('templates', 'the')} "
                f"templates.")
    if kind == "fktc" and params.get("frame") == "statement":
        return (f"A reliability probing set built with the construction of FKTC, the test corpus "
                f"of MONITOR (Wang et al., NAACL 2024), on cloze statements: per relation a "
                f"base statement and its paraphrases (`templates`, `is_base`, `frame`), at most "
                f"{params.get('questions', 'N')}, each posed cut before `[Y]` for the model to "
                f"complete (the paper's word-prediction frame); per fact up to "
                f"{params.get('negatives', 'N')} misprimes (`negatives`) put before the base "
                f"statement: {counts.get('prompts', 'see the counts for the number of')} "
                f"prompts.")
    if kind == "fktc":
        return (f"A reliability probing set built with the construction of FKTC, the test corpus "
                f"of MONITOR (Wang et al., NAACL 2024). Per relation a base question Q0 and its "
                f"paraphrases (`templates`, `is_base`), at most {params.get('questions', 'N')}; "
                f"per fact up to {params.get('negatives', 'N')} misprimes (`negatives`). A probe "
                f"asks each fact with every question, once after the gold answer as positive "
                f"interference and once after each negative: "
                f"{counts.get('prompts', 'see the counts for the number of')} prompts.")
    if kind == "templates":
        return ("Prompt templates per relation (`templates`): statements, questions and "
                "fact-checking frames, `[X]` standing for the subject and `[Y]` for the object. "
                + _TEMPLATES_NOTE)
    return f"A factprobe dataset of kind {code(kind)}."


def rationale(manifest: Mapping[str, Any]) -> str:
    kind = manifest.get("kind")
    return {
        "facts": "One table of facts that every probing construction starts from, with all "
                 "correct answers of a (subject, relation) pair kept together, so that no probe "
                 "marks a correct answer wrong or shows one as a distractor.",
        "mc": "A fixed set of choices per question makes accuracy comparable across models and "
              "gives a known chance level; drawing distractors from the same relation's objects "
              "keeps them plausible, and excluding the subject's other answers keeps every "
              "question with exactly one correct choice (Wu et al., WSDM 2025).",
        "nobel": "Birth years of Nobel laureates are facts of graded popularity with one correct "
                 "answer each, which the ZP-LKE paper uses to study how knowledge depends on "
                 "how well known an entity is.",
        "misprimes": "Wrong objects of the right type, put before a question, test whether a "
                     "model keeps its answer under misleading context (MONITOR's negative "
                     "interference).",
        "multiprompt": "One prompt measures a model's wording sensitivity as much as its "
                       "knowledge; many prompts per fact (names x templates) let accuracy, its "
                       "fluctuation and consistency be measured (BELIEF).",
        "fktc": "Paraphrased questions and in-context interference probe whether a model's "
                "answer distribution stays stable for the same fact, which MONITOR turns into a "
                "reliability score.",
        "templates": "Probes that ask in words need templates per relation; several diverse "
                     "templates let a probe separate knowledge from sensitivity to wording.",
    }.get(str(kind), "Built by factprobe for knowledge probing.")


def annotations(manifest: Mapping[str, Any]) -> str:
    kind = manifest.get("kind")
    text = ("No human annotation: every row is derived automatically from the data listed "
            "under Source Data, by the parameters listed there.")
    if kind in ("multiprompt", "fktc", "templates"):
        text += " " + _TEMPLATES_NOTE
    return text


def personal(manifest: Mapping[str, Any]) -> str:
    if manifest.get("kind") == "nobel":
        return ("The `laureates` table names people with their birth year and gender as the "
                "source graph records them. These are public facts in the source, but they are "
                "personal data: check the source's terms and your obligations before reuse.")
    return ("The dataset holds whatever entities the source graph holds; where those are "
            "people, their names and the facts the graph states about them are included. "
            "factprobe adds no other personal information.")


def biases(manifest: Mapping[str, Any]) -> list[str]:
    lang = _params(manifest).get("lang") or "en"
    out = [("- Coverage follows the source graph: entities and relations it describes well are "
            "over-represented, and the facts are only as correct and current as the graph."),
           f"- Only entities with a label in {code(lang)} are kept (a fact without one is "
           f"dropped "
           f"and counted), which favours entities well described in that language."]
    kind = manifest.get("kind")
    if kind == "mc":
        out.append("- Distractors come from the same relation's objects, in proportion to how "
                   "often they occur: frequent objects are frequent distractors, and a model "
                   "that prefers common answers is rewarded or penalised accordingly.")
    if kind in ("multiprompt", "fktc", "templates"):
        out.append("- Templates were written or paraphrased in one language and style; their "
                   "wording favours models trained on similar text.")
    return out


def limitations(manifest: Mapping[str, Any]) -> list[str]:
    counts, params = _counts(manifest), _params(manifest)
    out = ["- A model may know a fact under a name the dataset does not list; aliases reduce "
           "but do not remove this."]
    dropped = counts.get("dropped_relations")
    if isinstance(dropped, dict) and dropped:
        out.append(f"- {len(dropped)} relation(s) of the source were left out (see Source "
                   f"Data, Counts, for why).")
    if manifest.get("kind") == "mc" and isinstance(params.get("choices"), int):
        out.append(f"- With {params['choices']} choices, accuracy is bounded below by chance "
                   f"(1/{params['choices']}); compare models by how far they are above it.")
    if counts.get("short_negatives"):
        out.append(f"- {counts['short_negatives']:,} facts have fewer negatives than asked "
                   f"for: their relation has too few other objects.")
    if manifest.get("kind") == "fktc" and counts.get("dropped_relations"):
        out.append("- Relations without a question template are not in the dataset.")
    return out


def instance(table: str, row: Mapping[str, Any]) -> list[str]:
    """The first row of the default config, as JSON."""
    text = json.dumps(dict(row), indent=2, ensure_ascii=False, sort_keys=False, default=str)
    return ["### Data Instances", "", f"The first row of {code(table)}:", "", "```json", text,
            "```",
            ""]
