"""Three small graphs factprobe has never seen (made-up names), of different shapes, each of 4
relations and 100-300 facts, with hand-written templates: the user's-own-graph acceptance of
the planted models (tests/evaluators/cli/test_init_planting.py, docs/planting.md)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

SYL = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "sel", "dar", "bri", "mon", "tu", "fe", "gal",
       "hin", "jo", "pra", "quo", "wen", "zy")


def names(rng: np.random.Generator, n: int, k: tuple[int, int], taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        w = "".join(SYL[int(i)] for i in rng.integers(len(SYL), size=int(rng.integers(*k))))
        w = w.capitalize()
        if w not in taken:
            taken.add(w)
            out.append(w)
    return out


# relation: (subject category, object category, statements, questions)
RELATIONS = {
    "capital": ("country", "city", ["The capital of [X] is [Y].", "[X] has its capital in [Y].",
                                    "The government of [X] sits in [Y]."],
                ["What is the capital of [X]?", "Which city is the seat of power of [X]?",
                 "In which city is the government of [X] based?",
                 "Where does the parliament of [X] meet?"]),
    "language": ("country", "language", ["The official language of [X] is [Y].",
                                         "People in [X] speak [Y].",
                                         "Laws of [X] are written in [Y]."],
                 ["What is the official language of [X]?",
                  "Which language do people in [X] speak?",
                  "In what language are the laws of [X] written?",
                  "What do schools in [X] teach in?"]),
    "currency": ("country", "currency", ["The currency of [X] is the [Y].",
                                         "People in [X] pay with the [Y].",
                                         "Prices in [X] are given in [Y]."],
                 ["What is the currency of [X]?", "What do people in [X] pay with?",
                  "Which money is used in [X]?", "In what are prices in [X] given?"]),
    "continent": ("country", "continent", ["[X] lies in [Y].", "[X] is a country of [Y].",
                                           "The land of [X] is part of [Y]."],
                  ["On which continent is [X]?", "Where does [X] lie?",
                   "Which continent is [X] part of?", "In what part of the world is [X]?"]),
    "employer": ("person", "company", ["[X] works for [Y].", "The employer of [X] is [Y].",
                                       "[X] is employed by [Y]."],
                 ["Who employs [X]?", "For which company does [X] work?",
                  "Who is the employer of [X]?", "Where does [X] work?"]),
    "birthplace": ("person", "town", ["[X] was born in [Y].", "The birthplace of [X] is [Y].",
                                      "[X] comes from [Y]."],
                   ["Where was [X] born?", "What is the birthplace of [X]?",
                    "In which town was [X] born?", "Where does [X] come from?"]),
    "field": ("person", "field", ["[X] works in [Y].", "The field of [X] is [Y].",
                                  "[X] is an expert in [Y]."],
              ["What is the field of [X]?", "In which field does [X] work?",
               "What is [X] an expert in?", "Which subject does [X] study?"]),
    "instrument": ("person", "instrument", ["[X] plays the [Y].", "The instrument of [X] is the [Y].",
                                            "[X] is known for playing the [Y]."],
                   ["What does [X] play?", "Which instrument does [X] play?",
                    "What is the instrument of [X]?", "What is [X] known for playing?"]),
    "mouth": ("river", "sea", ["[X] flows into [Y].", "The mouth of [X] is in [Y].",
                               "[X] ends in [Y]."],
              ["Where does [X] flow into?", "Where is the mouth of [X]?",
               "Into which sea does [X] flow?", "Where does [X] end?"]),
    "source": ("river", "mountain", ["[X] rises on [Y].", "The source of [X] is on [Y].",
                                     "[X] springs from [Y]."],
               ["Where does [X] rise?", "Where is the source of [X]?",
                "From which mountain does [X] spring?", "On which mountain does [X] rise?"]),
    "country": ("river", "country", ["[X] flows through [Y].", "[X] is a river of [Y].",
                                     "The river [X] is in [Y]."],
                ["Which country does [X] flow through?", "Where is the river [X]?",
                 "In which country is [X]?", "Of which country is [X] a river?"]),
    "city": ("river", "city", ["[X] passes [Y].", "The city on [X] is [Y].",
                               "[Y] lies on [X]."],
             ["Which city does [X] pass?", "What city lies on [X]?",
              "Which town is on the banks of [X]?", "What is the city on [X]?"]),
}

# (name, subjects, {relation: distinct objects}): one-to-one, skewed, few-object shapes.
GRAPHS = [
    ("lands", 30, {"capital": 30, "language": 12, "currency": 15, "continent": 5}),
    ("people", 50, {"employer": 20, "birthplace": 25, "field": 8, "instrument": 10}),
    ("rivers", 70, {"mouth": 10, "source": 30, "country": 20, "city": 70}),
]


def facts(graph: str, seed: int = 0) -> list[tuple[str, str, str, str, str]]:
    """(subject id, subject label, relation, object id, object label) of ``graph``."""
    name, n, rels = next(g for g in GRAPHS if g[0] == graph)
    rng = np.random.default_rng([seed, len(name), n])
    taken: set[str] = set()
    subjects = names(rng, n, (2, 4), taken)
    rows = []
    for rel, k in rels.items():
        objects = names(rng, k, (2, 4), taken)
        # a skewed draw (a few objects hold many subjects), every object used at least once
        weights = 1 / np.arange(1, k + 1)
        pick = list(range(k)) + list(rng.choice(k, size=max(0, n - k), p=weights / weights.sum()))
        pick = [pick[i] for i in rng.permutation(len(pick))][:n]
        for i, j in enumerate(pick):
            rows.append((f"s{i}", subjects[i], rel, f"{rel}{j}", objects[j]))
    return rows


def write_graph(path: Path, graph: str) -> Path:
    lines = ["@prefix ex: <http://example.org/> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> ."]
    labels = {}
    rels = next(g for g in GRAPHS if g[0] == graph)[2]
    lines += [f'ex:{rel} rdfs:label "{rel}"@en .' for rel in rels]
    for s, s_label, rel, o, o_label in facts(graph):
        lines.append(f"ex:{s} ex:{rel} ex:{o} .")
        labels[s], labels[o] = s_label, o_label
    lines += [f'ex:{e} rdfs:label "{label}"@en .' for e, label in labels.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_templates(folder: Path, graph: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rel in next(g for g in GRAPHS if g[0] == graph)[2]:
        subj, obj, statements, questions = RELATIONS[rel]
        body = [f'relation: "ex:{rel}"', f'label: "{rel}"', f'subject_category: "{subj}"',
                f'object_category: "{obj}"', "templates:"]
        items = [("statement", t) for t in statements] + \
                [("question", f"{q} [Y].") for q in questions]
        body += [f'  - {{id: m{k + 1}, style: {style}, text: "{text}"}}'
                 for k, (style, text) in enumerate(items)]
        (folder / f"ex_{rel}.yaml").write_text("\n".join(body) + "\n", encoding="utf-8")
