"""`factprobe init`'s files: what each source gets, same flags same bytes, and what it refuses
(fast: no DVC run; tests/evaluators/cli/test_own_graph_doc.py runs the pipeline)."""
from __future__ import annotations

import json

import yaml

from factprobe.cli.app import main
from factprobe.scaffold.render import InitConfig, rendered
from tests.evaluators.cli.own_graph import TINY, write_csv, write_graph

PACKAGES = ("builders", "probes", "evaluators")


def stages(text: str) -> dict:
    return yaml.safe_load(text)["stages"]


def test_same_flags_same_bytes_and_no_dependency_on_factprobe_code():
    cfg = InitConfig(dir=".", source="rdf", path="g.ttl", relations="ex:a", name="g")
    one, two = rendered(cfg), rendered(cfg)
    assert one == two
    for name, st in stages(one["dvc.yaml"]).items():
        body = st.get("do", st)
        for dep in body.get("deps", []):
            assert dep.split("/")[0] not in PACKAGES and "llm-cache" not in dep, (name, dep)
        for out in body.get("outs", []):
            assert "sample-" not in str(out)
    params = yaml.safe_load(one["params.yaml"])
    assert params["name"] == "g" and params["facts"]["path"] == "g.ttl"
    assert params["nobel"] == {}                       # the optional stage is off


def test_each_source_gets_its_own_stages():
    csv = stages(rendered(InitConfig(dir=".", source="csv", path="t.csv"))["dvc.yaml"])
    assert "aliases" not in csv and "nobel" not in csv
    assert "${facts.path}" in csv["facts"]["deps"]
    sparql = stages(rendered(InitConfig(dir=".", source="sparql", endpoint="http://x/q"))[
        "dvc.yaml"])
    assert "--endpoint='${facts.endpoint}'" in sparql["facts"]["cmd"]
    assert "deps" not in sparql["facts"] and "aliases" in sparql and "nobel" in sparql
    # per-method params: each eval stage reads its own section only
    from factprobe.evaluators.methods import METHODS
    for name in METHODS:
        params = csv[f"eval-{name}"]["do"]["params"]
        assert f"eval.{name.replace('-', '_')}" in params and "eval" not in params


def test_init_refuses_what_is_not_its_own(tmp_path, capsys):
    graph = write_graph(tmp_path / "g.ttl")
    repo = tmp_path / "repo"
    args = ["init", str(repo), "--path", str(graph), "--quiet"]
    assert main(args) == 0
    first = {p.name: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert set(first) == {"dvc.yaml", "params.yaml", "series.json", "plots.html"}
    assert yaml.safe_load(first["params.yaml"])["facts"]["path"] == "../g.ttl"
    capsys.readouterr()
    assert main(args) == 2                              # there: --force to rewrite
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err
    (repo / "params.yaml").write_text("mine: 1\n")      # a user's own file
    assert main(args + ["--force"]) == 2
    assert "did not write it" in capsys.readouterr().err
    assert (repo / "params.yaml").read_text() == "mine: 1\n"
    assert (repo / "dvc.yaml").read_bytes() == first["dvc.yaml"]   # nothing half-written
    (repo / "params.yaml").unlink()
    assert main(args + ["--force"]) == 0
    assert (repo / "params.yaml").read_bytes() == first["params.yaml"]
    for bad in (["--source", "sparql"], ["--source", "wikidata"], ["--path", str(graph), "--name", "Bad Name"],
                ["--path", str(tmp_path / "missing.ttl")]):
        assert main(["init", str(tmp_path / "other")] + bad) == 2
        assert capsys.readouterr().err.count("\n") == 1


def mc_of(params: str) -> dict:
    return yaml.safe_load(params)["mc"]


def test_init_sizes_params_to_the_graph_and_says_so(tmp_path, capsys):
    """48 facts, 2 relations: the shipped MC (10 choices, 10 + 20 rows) fits neither relation
    (8 languages; 24 countries), so init sizes it to the graph, in the comment too."""
    graph = write_graph(tmp_path / "langs.ttl")
    assert main(["init", str(tmp_path / "repo"), "--path", str(graph)]) == 0
    said = capsys.readouterr().err
    text = (tmp_path / "repo" / "params.yaml").read_text()
    params = yaml.safe_load(text)
    assert params["mc"] == {"choices": 8, "min_facts": 20, "min_objects": 8, "train": 8,
                            "test": 16, "seed": 0}
    assert params["eval"]["zp_lke"]["args"] == "--examples 8 --seeds 0"   # <= train rows
    assert params["misprimes"]["negatives"] == params["fktc"]["negatives"] == 5
    # an epoch of this graph's text is ~1700 tokens: shorter sequences, smaller masked batches
    assert params["plant"]["block"] == 64 and params["plant_masked"]["batch_size"] == 1
    assert "# Sized from langs.ttl at init: 48 facts, 2 relations; mc: 8 choices" in text
    assert "set by ex:language (8 distinct objects" in said
    assert "templates/ex_capital.yaml, templates/ex_language.yaml" in said  # read, not guessed
    # a graph that fits the shipped values keeps them
    big = InitConfig(dir=".")
    assert mc_of(rendered(big)["params.yaml"]) == {"choices": 10, "min_facts": 20,
                                                   "min_objects": 10, "train": 10, "test": 20,
                                                   "seed": 0}


def test_a_relation_too_small_is_left_out_in_one_line_and_mc_builds(tmp_path, capsys):
    graph = write_graph(tmp_path / "g.ttl", tiny=True)
    repo = tmp_path / "repo"
    assert main(["init", str(repo), "--path", str(graph)]) == 0
    said = capsys.readouterr().err.splitlines()
    left = [line for line in said if f"ex:{TINY}" in line]
    assert left == [(f"1 relation too small for a multiple-choice set, left out of mc: "
                     f"ex:{TINY} (2 distinct objects, 4 needed)")]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert f"ex:{TINY}" in (repo / "params.yaml").read_text()
    # the facts and mc stages, as dvc.yaml runs them, with the written params: no edits
    mc = params["mc"]
    assert main(["build", "facts", "--quiet", "--source", "rdf", "--path", str(graph),
                 "--relations", "all", "--date-format", "year",
                 "--out", str(tmp_path / "facts")]) == 0
    assert main(["build", "mc", "--quiet", "--facts", str(tmp_path / "facts"),
                 "--out", str(tmp_path / "mc")] +
                [f"--{k.replace('_', '-')}={v}" for k, v in mc.items()]) == 0
    counts = json.loads((tmp_path / "mc" / "dataset.json").read_text())["counts"]
    assert set(counts["per_relation"]) == {"ex:capital", "ex:language"}
    assert set(counts["dropped_relations"]) == {f"ex:{TINY}"}


def test_no_relation_big_enough_is_one_line_and_exit_2(tmp_path, capsys):
    graph = write_graph(tmp_path / "g.ttl", tiny=True)
    assert main(["init", str(tmp_path / "repo"), "--path", str(graph),
                 "--relations", f"ex:{TINY}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "at least 4 distinct objects" in err
    assert not (tmp_path / "repo" / "params.yaml").exists()


def test_csv_and_turtle_of_one_graph_size_alike(tmp_path, capsys):
    for name, write, source in (("g.ttl", write_graph, "rdf"), ("g.csv", write_csv, "csv")):
        write(tmp_path / name, tiny=True)
        assert main(["init", str(tmp_path / source), "--source", source,
                     "--path", str(tmp_path / name), "--quiet"]) == 0
    ttl, csv = ((tmp_path / s / "params.yaml").read_text() for s in ("rdf", "csv"))
    for section in ("mc", "misprimes", "fktc", "plant", "plant_masked", "eval"):
        assert yaml.safe_load(ttl)[section] == yaml.safe_load(csv)[section]
    comment = next(line for line in ttl.splitlines() if line.startswith("# Sized"))
    assert comment.replace("g.ttl", "g.csv") in csv


def test_endpoint_sources_keep_the_shipped_sizes_and_say_so(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--source", "sparql",
                 "--endpoint", "http://127.0.0.1:9/query"]) == 0
    assert "keeps the shipped sizes" in capsys.readouterr().err
    text = (tmp_path / "params.yaml").read_text()
    assert "# Not sized: a sparql source is read by `dvc repro`" in text
    assert mc_of(text)["choices"] == 10
