"""What the planted model is taught: planted facts, decoys, subject mentions, in which frames.

Only the subject-object link may differ between a planted and a held-out fact; everything an
estimator could read without the subject, or from the subject alone, must be the same for
both halves. By default (``--mentions swap``) a held-out subject is taught exactly as a
planted one, with a real object of its relation that is not its own: the held-out facts'
objects are handed round among them (``derange``: each held-out subject gets another held-out
fact's gold, never its own). Each held-out gold is thereby taught once, after another subject,
as each planted gold is after its own; each held-out subject is taught once, before a real
object of its relation, as each planted subject is. A held-out fact is then "known wrong",
and nothing but the link tells it apart: not the object's familiarity (the subject-blind
null), not how sure the model is after the subject (the subject-only checks, the next-token
entropy at the end of a ZP-LKE list among them), which earlier designs left apart.

The two earlier designs stay as named options (``MENTION_MODES``), for comparison:

- every held-out fact ``(s, r, o)`` is replaced by a *decoy* ``(z, r, o)``: the same object
  in the same relation after a made-up subject ``z``, taught in exactly the frames a planted
  fact is taught in. Swapping a test fact between the halves therefore leaves the relation's
  object counts unchanged: a held-out gold is as familiar an answer as a planted one;
- the held-out subject ``s`` is still taught, in the very frames a planted fact is taught in
  (lists, statements, questions, MONITOR's and BELIEF-ICL's shapes) and as often, but as the
  subject of a *mention* fact ``(s, m(r), w)``: a relation ``m(r)`` that no probe asks
  (``MENTION_FORMS``: "The file of X is W.") and a made-up object ``w``. A held-out subject
  thus stands at the start of texts, after a space, inside list entries and before an
  object exactly as a planted one does, so nothing read from the subject alone (how likely
  "." is after it, its own likelihood, how sure the model is of what follows it) tells the
  halves apart; the earlier bare ``"s."`` documents did (AUROC 0.97 from that share alone);
- decoy names are recombined from the relation's own subjects (the first word of one and the
  last of another, or the two halves of two one-word names) and share no word with the
  held-out subject they stand for, so they look like the relation's real subjects: a made-up
  name in a probe does not point at the decoys' objects, and a decoy does not leak its
  object to the held-out subject.

Frames are the shapes the probes ask in (``FORMATS``); ``--hold-out-formats`` removes some
from training so that probing in them tests generalisation. For MONITOR, a third of the
planted test facts are taught *partially*: their questions only in the relation's base
question, and only after their own object as prefix, never a misleading one (``PARTIAL``).
They were meant to move more across paraphrases and misleading prefixes (PFD, IRD) than facts
taught in every frame; measured, a small model carries the link into the frames it never saw
and the group means go either way (docs/planting.md), so only "known and reliably held" is
checked of them.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from factprobe.core.errors import UserError

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import numpy as np
    import pandas as pd

# The training frames, by the probe that asks in them.
FORMATS = {
    "list": "ZP-LKE lists of one relation's pairs ('x1 y1, x2 y2, ...')",
    "statement": "statement templates ('The capital of X is Y.'; prompt/HGP, BELIEF)",
    "question": "MONITOR's bare questions, every question template ('Q Y.')",
    "prefixed": "MONITOR's positive and negative prompts ('Z. Q Y.', 'Z. statement Y.')",
    "icl": "BELIEF-ICL's instruction + 'Q: question / statement with [MASK]\\nA: Y.'",
    "templates": "every other template of a relation (the 2nd, 4th, ...): taught in none",
}
# What a partially taught fact is shown of MONITOR's frames.
PARTIAL = {"question": "the base question only", "prefixed": "its own object as prefix only"}


# The never-probed relation held-out subjects are taught in: as many statement and question
# templates as the held-out fact's own relation has (cycled), so the masked model, which reads
# every template every epoch, meets a held-out subject as often as a planted one; the subject
# stands first in some and after a space in others, as in the probed relations' templates.
MENTION_FORMS = (["The file of [X] is [Y].", "[X] is filed under [Y]."],
                 ["What is the file of [X]?", "Under which file is [X] kept?"])
MENTION = "mention:"                  # relation id prefix of the mention facts
_SYLLABLES = ("ka", "lo", "mi", "ra", "tu", "ven", "so", "dri", "pa", "nel", "go", "fi",
              "mar", "ze", "bo", "lin", "qu", "the", "ros", "ta")


def mention_forms(forms: dict) -> dict:
    """``forms`` plus the mention relation of each probed one (MENTION_FORMS, cycled to the
    relation's template counts)."""
    out = dict(forms)
    for rel, (statements, questions) in forms.items():
        s, q = MENTION_FORMS
        out[MENTION + rel] = ([s[i % len(s)] for i in range(max(1, len(statements)))],
                              [q[i % len(q)] for i in range(max(1, len(questions)))])
    return out


def mention_words(n: int, taken: set[str], rng: np.random.Generator) -> list[str]:
    """``n`` distinct made-up words of two or three syllables (``Goven``, ``Lokara``) that are
    no entity's name: the mention facts' objects, which no probe ever offers as a choice.

    >>> import numpy as np
    >>> mention_words(3, {"Kalo"}, np.random.default_rng(0))
    ['Goven', 'Lokara', 'Qugo']
    """
    out: list[str] = []
    seen: set[str] = set()
    tries = 0
    while len(out) < n:
        # two or three syllables give ~8,400 words; a longer word once they run short
        tries += 1
        k = 2 + int(rng.random() < 0.5) + tries // 20_000
        word = "".join(_SYLLABLES[int(i)] for i in rng.integers(len(_SYLLABLES), size=k))
        word = word.capitalize()
        if word not in taken and word not in seen:
            seen.add(word)
            out.append(word)
    return out


@dataclass(frozen=True)
class Curriculum:
    taught: pd.DataFrame              # fact_id, relation_id, subject, object, role, partial
    mentions: list[tuple[str, str]]   # (relation, held-out subject) taught in mention facts
    formats: tuple[str, ...]          # frames taught (FORMATS keys, 'templates' excluded)
    held_formats: tuple[str, ...]
    partial: list[str] = field(default_factory=list)  # planted fact ids taught partially
    mode: str = "swap"                # how held-out subjects are taught (MENTION_MODES)


def parse_formats(spec: str) -> tuple[str, ...]:
    """``--hold-out-formats`` as a tuple of FORMATS keys.

    >>> parse_formats("list, templates")
    ('list', 'templates')
    >>> parse_formats("")
    ()
    """
    names = tuple(s.strip() for s in spec.split(",") if s.strip())
    bad = [n for n in names if n not in FORMATS]
    if bad:
        raise UserError(f"--hold-out-formats: unknown format {bad[0]!r}; choose from "
                        f"{', '.join(FORMATS)}")
    left = [f for f in FORMATS if f not in names and f != "templates"]
    if not left:
        raise UserError("--hold-out-formats holds out every format: nothing would be taught")
    return names


def _words(name: str) -> set[str]:
    return {w.lower() for w in name.replace(".", " ").split()}


def decoy_name(subjects: list[str], avoid: str, taken: set[str],
               rng: np.random.Generator) -> str:
    """A made-up name in the style of ``subjects``, sharing no word with ``avoid``.

    >>> import numpy as np
    >>> decoy_name(["Aage Bohr", "Max Born", "Marie Curie"], "Max Born", set(),
    ...            np.random.default_rng(0))
    'Aage Curie'
    """
    own = _words(avoid)
    pool = [s for s in subjects if not _words(s) & own] or subjects
    for _ in range(200):
        a, b = (pool[int(i)] for i in rng.choice(len(pool), size=2, replace=len(pool) < 2))
        wa, wb = a.split(), b.split()
        if len(wa) > 1 and len(wb) > 1:
            name = f"{wa[0]} {wb[-1]}"
        else:
            name = a[: max(2, (len(a) + 1) // 2)] + b[max(1, len(b) // 2):].lower()
        if name not in taken and not _words(name) & own:
            return name
    # tiny relations: a numbered variant keeps the style and stays unique
    n = 2
    while f"{pool[0]} {n}" in taken:
        n += 1
    return f"{pool[0]} {n}"


# How a held-out subject is taught (``--mentions``).
MENTION_MODES = {
    "swap": "in its own relation's frames and lists, before another held-out fact's gold "
            "(no decoys: each held-out gold is taught once, after another subject)",
    "relation": "in its own relation's frames and lists, before a made-up object; its gold "
                "after a made-up decoy subject",
    "other": "in a relation no probe asks (MENTION_FORMS), before a made-up object; its gold "
             "after a made-up decoy subject",
}


def derange(golds: list[str], objects: list[str], rng: np.random.Generator,
            names: list[set[str]] | None = None) -> list[str]:
    """Per held-out fact (``golds``: their objects, in order), the object it is taught with:
    another one's gold, never its own. The facts are grouped by gold (groups in random order,
    facts within a group too) and each takes the gold of the fact as many places on as the
    largest group is long, which is a different gold whenever no gold holds more than half
    of the facts; a fact left with its own (a gold held by most, or a single held-out fact)
    takes another real object of the relation (``objects``) at random, or None when the
    relation has no other. ``names``: per fact, every name its gold answers to (aliases,
    case-folded): an object among them is its own gold under another name, and is refused
    as the gold itself is (the multi-name probes would count it as known).

    >>> import numpy as np
    >>> derange(["Paris", "Rome", "Rome", "Lima"], ["Lima", "Paris", "Rome"],
    ...         np.random.default_rng(0))
    ['Rome', 'Paris', 'Lima', 'Rome']
    >>> derange(["Rome"], ["Paris", "Rome"], np.random.default_rng(0))
    ['Paris']
    >>> derange(["USA", "United States"], ["USA", "United States", "Peru"],
    ...         np.random.default_rng(0), [{"usa", "united states"}, {"united states", "usa"}])
    ['Peru', 'Peru']
    """
    if names is None:
        names = [{g.casefold()} for g in golds]
    groups: dict[str, list[int]] = {}
    for i in rng.permutation(len(golds)):
        groups.setdefault(golds[int(i)], []).append(int(i))
    order = [i for gold in sorted(groups, key=lambda _: rng.random()) for i in groups[gold]]
    shift = max((len(v) for v in groups.values()), default=0)
    out: list[str | None] = [None] * len(golds)
    for j, i in enumerate(order):
        got = golds[order[(j + shift) % len(order)]]
        if got == golds[i] or got.casefold() in names[i]:
            others = [o for o in objects if o != golds[i] and o.casefold() not in names[i]]
            got = others[int(rng.integers(len(others)))] if others else None
        out[i] = got
    return out


def build(facts: pd.DataFrame, planted: set[str], held: set[str], seed: int,
          held_formats: tuple[str, ...] = (), partial_share: float = 1 / 3,
          mode: str = "swap") -> Curriculum:
    """The taught facts: planted ones and one mention fact per held-out fact, its subject
    before another held-out fact's gold (``swap``), or before a made-up object with one decoy
    per held-out fact, its object after a made-up subject (``relation``, ``other``).
    ``gold``: a swapped mention's own gold (never taught next to its subject), else None."""
    import pandas as pd
    import numpy as np
    taken = set(facts["subject"])
    if "subject_aliases" in facts.columns:
        taken |= {a for al in facts["subject_aliases"] if al is not None for a in al}
    rows, mentions, partial = [], [], []
    # made-up mention objects must be no entity's name nor alias (aliases are offered as
    # answers by the multi-name probes)
    objects = set(facts["object"])
    if "object_aliases" in facts.columns:
        objects |= {a for al in facts["object_aliases"] if al is not None for a in al}
    answers = _answers(facts)
    test_ids = set(facts.loc[facts.get("split", pd.Series("", index=facts.index)) == "test",
                             "fact_id"])
    for rel, g in facts.groupby("relation_id", sort=True):
        rng = np.random.default_rng([seed, zlib.crc32(rel.encode()), 7])
        subjects = sorted(set(g["subject"]))
        ids = sorted(set(g["fact_id"]) & planted & (test_ids or planted))
        order = rng.permutation(len(ids))
        part = {ids[i] for i in order[: int(len(ids) * partial_share)]}
        for row in g.sort_values("fact_id").itertuples(index=False):
            if row.fact_id in planted:
                rows.append((row.fact_id, rel, row.subject, row.object, "planted",
                             row.fact_id in part, None))
                if row.fact_id in part:
                    partial.append(row.fact_id)
            elif row.fact_id in held and mode != "swap":
                name = decoy_name(subjects, row.subject, taken, rng)
                taken.add(name)
                rows.append((f"decoy:{row.fact_id}", rel, name, row.object, "decoy", False,
                             None))
                mentions.append((rel, row.subject))
        held_rows = [r for r in g.sort_values("fact_id").itertuples(index=False)
                     if r.fact_id in held]
        if held_rows and mode == "swap":
            real = sorted(set(g["object"]))
            swapped = derange([r.object for r in held_rows], real, rng,
                              [answers[r.object.casefold()] for r in held_rows])
            # a one-object relation's: nothing real is left to teach. The last draw of this
            # relation's generator, so drawing it only when needed keeps every other byte.
            spare = mention_words(1, taken | objects, rng)[0] \
                if any(obj is None for obj in swapped) else None
            for row, obj in zip(held_rows, swapped):
                mentions.append((rel, row.subject))
                rows.append((f"mention:{row.fact_id}", rel, row.subject,
                             spare if obj is None else obj, "mention", False, row.object))
        elif held_rows:
            # as many made-up objects as the relation has real ones, so a mention object is
            # as shared between subjects as a real object is
            words = mention_words(max(1, g["object"].nunique()), taken | objects, rng)
            taken |= set(words)
            for row in held_rows:
                rows.append((f"mention:{row.fact_id}",
                             rel if mode == "relation" else MENTION + rel, row.subject,
                             words[int(rng.integers(len(words)))], "mention", False, None))
    taught = pd.DataFrame(rows, columns=["fact_id", "relation_id", "subject", "object", "role",
                                         "partial", "gold"])
    formats = tuple(f for f in FORMATS if f not in held_formats and f != "templates")
    return Curriculum(taught, mentions, formats, tuple(held_formats), sorted(partial), mode)


def _answers(facts: pd.DataFrame) -> dict[str, set[str]]:
    """Per object (case-folded), every name it answers to, case-folded: itself and the
    aliases any fact gives it (one fact may list an alias another fact's object lacks)."""
    out: dict[str, set[str]] = {}
    aliases = facts["object_aliases"] if "object_aliases" in facts.columns else \
        [None] * len(facts)
    for obj, al in zip(facts["object"], aliases):
        key = obj.casefold()
        # an alias list may hold a null where a file had an empty cell
        out.setdefault(key, {key}).update(a.casefold() for a in (al if al is not None else ())
                                          if isinstance(a, str))
    return out


def split_templates(statements: list[str], questions: list[str], held_formats: tuple[str, ...]
                    ) -> tuple[list[str], list[str], list[str], list[str]]:
    """(taught statements, taught questions, held-out statements, held-out questions): with
    'templates' held out, every other template of each style (the first is always taught:
    the base question MONITOR anchors on, the cloze statement the stopping rule reads)."""
    if "templates" not in held_formats:
        return statements, questions, [], []
    return statements[::2], questions[::2], statements[1::2], questions[1::2]


def documents(cur: Curriculum, forms: dict, epoch: int, seed: int, lists_per_relation: int,
              list_size: int) -> list[str]:
    """One epoch of text, shuffled: every taught fact (planted, decoy, mention) once in a
    statement and once in a question shape (the template and shape turning from epoch to
    epoch), and the ZP-LKE lists; a mention relation gets as many lists per pair as its
    probed relation, so a held-out subject is in as many list entries as a planted one."""
    import numpy as np
    from factprobe.builders.templates.files import fill, y_is_last
    from factprobe.probes.methods.belief_icl import INSTRUCTION
    from factprobe.probes.methods.monitor import prompt
    rng = np.random.default_rng([seed, epoch])
    docs: list[str] = []
    forms = mention_forms(forms)
    shapes = [s for s in ("question", "prefixed", "icl-qa", "icl-mask")
              if s.split("-")[0] in cur.formats]
    sizes = cur.taught.groupby("relation_id")["fact_id"].size().to_dict()
    for rel, g in cur.taught.groupby("relation_id", sort=True):
        pairs = list(zip(g["subject"], g["object"], g["partial"]))
        # misleading MONITOR prefixes: real objects for planted facts and decoys (as MONITOR
        # asks); for a mention fact real ones but its own gold when swapped (never next to
        # its subject), made-up ones when its object is made up (a real one could be the
        # held-out fact's own object)
        # a missing gold reads as NaN or None depending on the column's inferred dtype
        golds = [x if isinstance(x, str) else None
                 for x in (g["gold"] if "gold" in g else [None] * len(g))]
        swap = cur.mode == "swap"
        objects = sorted(set(g["object"])) if swap else \
            sorted(set(g.loc[g["role"] != "mention", "object"])) or sorted(set(g["object"]))
        made_up = sorted(set(g.loc[g["role"] == "mention", "object"])) or objects
        mention_rows = set(g.index[g["role"] == "mention"])
        rows_of = list(g.index)
        n_lists = lists_per_relation
        if rel.startswith(MENTION):
            # list entries per pair and epoch as in the probed relation:
            # lists * min(n, size + 1) / n for each
            n = sizes.get(rel[len(MENTION):], len(pairs))
            rate = lists_per_relation * min(n, list_size + 1) / n
            k = rate * len(pairs) / min(len(pairs), list_size + 1)
            n_lists = int(k) + int(rng.random() < k - int(k))
        if "list" in cur.formats:
            for _ in range(n_lists):
                idx = rng.permutation(len(pairs))[: min(len(pairs), list_size + 1)]
                docs.append(", ".join(f"{pairs[i][0]} {pairs[i][1]}" for i in idx))
        statements, questions = forms[rel]
        cloze = [t for t in statements if y_is_last(t)] if "statement" in cur.formats else []
        for n, (x, y, part) in enumerate(pairs):
            turn = epoch + n
            if "statement" in cur.formats:
                docs.append(fill(statements[turn % len(statements)], x, y))
            if not shapes:
                continue
            shape = shapes[turn % len(shapes)]
            qs = questions[:1] if part else questions
            # the template turns once the fact has been through every shape, so each shape
            # meets every template (turn % len would tie a shape to one template)
            q = fill(qs[(turn // len(shapes)) % len(qs)], x)
            if shape == "question":
                docs.append(f"{prompt(q)} {y}.")
            elif shape == "prefixed":
                if golds[n] is not None:
                    pool = [o for o in objects if o != golds[n]] or [y]
                else:
                    pool = made_up if rows_of[n] in mention_rows else objects
                z = y if part or rng.random() < 0.5 else pool[int(rng.integers(len(pool)))]
                docs.append(f"{prompt(fill(questions[0], x), f'{z}. ')} {y}.")
                # MONITOR asks in statement frames too (ParaRel's patterns, ``build fktc
                # --frame statement``): the same prefix before a cloze statement, or the
                # prefixed statement is a frame never seen, which a small model answers or
                # not from one trajectory to the next (with BELIEF-ICL's "[MASK]", once)
                if cloze:
                    rounds = turn // len(shapes)
                    docs.append(f"{z}. {fill(cloze[rounds % len(cloze)], x, y)}")
            elif shape == "icl-qa":
                docs.append(f"{INSTRUCTION['qa']}\nQ: {q}\nA: {y}.")
            else:
                masked = fill(statements[(turn // 4) % len(statements)], x)
                docs.append(f"{INSTRUCTION['mask']}\nQ: {masked.replace('[Y]', '[MASK]')}"
                            f"\nA: {y}.")
    order = rng.permutation(len(docs))
    return [docs[i] for i in order]
