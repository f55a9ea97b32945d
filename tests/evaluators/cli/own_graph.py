"""A small graph factprobe has never seen (made-up countries, capitals and languages) and its
hand-written templates, for the `factprobe init` pipeline test."""
from __future__ import annotations

from pathlib import Path

COUNTRIES = [a + b for a in ("Ka", "Lo", "Mi", "Ne", "Ru", "Ta") for b in ("vor", "lin", "dap", "sen")]
CITIES = [a + b for a in ("Bel", "Dor", "Fen", "Gal", "Hol", "Jar") for b in ("ton", "mar", "ia", "os")]
LANGUAGES = ["Kavish", "Lorese", "Mintic", "Nebran", "Rusk", "Tamol", "Ulvic", "Orn"]

TEMPLATES = {
    "capital": ("country", "city", [
        ("statement", "The capital of [X] is [Y]."),
        ("statement", "[X] has its capital in [Y]."),
        ("statement", "The government of [X] sits in [Y]."),
        ("question", "What is the capital of [X]? [Y]."),
        ("question", "Which city is the seat of power of [X]? [Y]."),
        ("question", "In which city is the government of [X] based? [Y]."),
        ("question", "Where does the parliament of [X] meet? [Y]."),
        ("check", "[Y] is the capital of [X]. True or false?")]),
    "language": ("country", "language", [
        ("statement", "The official language of [X] is [Y]."),
        ("statement", "People in [X] speak [Y]."),
        ("statement", "Laws of [X] are written in [Y]."),
        ("question", "What is the official language of [X]? [Y]."),
        ("question", "Which language do people in [X] speak? [Y]."),
        ("question", "In what language are the laws of [X] written? [Y]."),
        ("question", "What do schools in [X] teach in? [Y]."),
        ("check", "[Y] is the official language of [X]. True or false?")]),
}


# A relation too small for any multiple-choice set: two distinct objects.
TINY = "hemisphere"


def facts(tiny: bool = False) -> list[tuple[str, str, str, str, str]]:
    """(subject id, subject label, relation, object id, object label) of the graph."""
    rows = []
    for i, country in enumerate(COUNTRIES):
        rows.append((f"c{i}", country, "capital", f"city{i}", CITIES[i]))
        j = i % len(LANGUAGES)
        rows.append((f"c{i}", country, "language", f"lang{j}", LANGUAGES[j]))
        if tiny:
            rows.append((f"c{i}", country, TINY, f"h{i % 2}", ("North", "South")[i % 2]))
    return rows


def write_graph(path: Path, tiny: bool = False) -> Path:
    """The graph as Turtle; ``tiny`` adds :data:`TINY`."""
    lines = ["@prefix ex: <http://example.org/> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> ."]
    rels = list(TEMPLATES) + [TINY] * tiny
    for rel in rels:
        lines.append(f'ex:{rel} rdfs:label "{rel}"@en .')
    labels = {}
    for s, s_label, rel, o, o_label in facts(tiny):
        lines.append(f"ex:{s} ex:{rel} ex:{o} .")
        labels[s], labels[o] = s_label, o_label
    lines += [f'ex:{e} rdfs:label "{label}"@en .' for e, label in labels.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_csv(path: Path, tiny: bool = False) -> Path:
    """The same graph as a CSV of triples (docs/sources.md)."""
    lines = ["subject,subject_label,relation,relation_label,object,object_label"]
    lines += [f"ex:{s},{s_label},ex:{rel},{rel},ex:{o},{o_label}"
              for s, s_label, rel, o, o_label in facts(tiny)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_templates(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rel, (subj, obj, items) in TEMPLATES.items():
        body = [f'relation: "ex:{rel}"', f'label: "{rel}"', f'subject_category: "{subj}"',
                f'object_category: "{obj}"', "templates:"]
        body += [f'  - {{id: m{k + 1}, style: {style}, text: "{text}"}}'
                 for k, (style, text) in enumerate(items)]
        (folder / f"ex_{rel}.yaml").write_text("\n".join(body) + "\n", encoding="utf-8")
