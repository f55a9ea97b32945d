"""`factprobe init`'s files: what each source gets, same flags same bytes, and what it refuses
(fast: no DVC run; tests/evaluators/cli/test_init_pipeline.py runs the pipeline)."""
from __future__ import annotations

import yaml

from evaluators.cli.app import main
from evaluators.scaffold.render import InitConfig, rendered

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
    assert "--endpoint ${facts.endpoint}" in sparql["facts"]["cmd"]
    assert "deps" not in sparql["facts"] and "aliases" in sparql and "nobel" in sparql
    # per-method params: each eval stage reads its own section only
    for name in ("zp-lke", "prompt", "belief", "belief-icl", "monitor"):
        params = csv[f"eval-{name}"]["do"]["params"]
        assert f"eval.{name.replace('-', '_')}" in params and "eval" not in params


def test_init_refuses_what_is_not_its_own(tmp_path, capsys):
    graph = tmp_path / "g.ttl"
    graph.write_text("")
    repo = tmp_path / "repo"
    args = ["init", str(repo), "--path", str(graph), "--quiet"]
    assert main(args) == 0
    first = {p.name: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert set(first) == {"dvc.yaml", "params.yaml", "series.json"}
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
