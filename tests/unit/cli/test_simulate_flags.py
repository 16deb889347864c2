"""`karpy simulate` flags as kubectl users expect them, run as the installed program: `-f`
takes files, directories (`-R`) and `-`; `--fail-on-unschedulable` exits 3; the catalogue
follows the NodeClasses, and a mismatch names the flag to use."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.cli.installed import karpy
from tests.unit.cli.scenarios import AWS_POOL, KWOK_POOL, deployment


def _pods(out: str) -> set[str]:
    plan = json.loads(out)
    return {pod for claim in plan["nodeClaims"] for pod in claim["pods"]}


def _tree(root: Path) -> Path:
    """root/pool.yaml, root/web.yml, root/notes.txt, root/sub/api.json (a List)."""
    root.mkdir()
    (root / "pool.yaml").write_text(KWOK_POOL)
    (root / "web.yml").write_text(deployment("web"))
    (root / "notes.txt").write_text("not a manifest: {{{")
    (root / "sub").mkdir()
    api = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "api", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            }
        ],
    }
    (root / "sub" / "api.json").write_text(json.dumps(api))
    return root


def test_f_directory_reads_its_manifests_and_R_its_subdirectories(tmp_path: Path) -> None:
    root = _tree(tmp_path / "scenario")
    flat = karpy("simulate", "-f", str(root), "-o", "json")
    assert flat.returncode == 0, flat.stderr
    assert _pods(flat.stdout) == {"default/web-0", "default/web-1"}
    deep = karpy("simulate", "-f", str(root), "-R", "-o", "json")
    assert deep.returncode == 0, deep.stderr
    assert _pods(deep.stdout) == {"default/web-0", "default/web-1", "default/api"}


def test_f_dash_reads_standard_input_alongside_files(tmp_path: Path) -> None:
    pool = tmp_path / "pool.yaml"
    pool.write_text(KWOK_POOL)
    done = karpy("simulate", "-f", str(pool), "-f", "-", "-o", "json", stdin=deployment("web"))
    assert done.returncode == 0, done.stderr
    assert _pods(done.stdout) == {"default/web-0", "default/web-1"}


def test_a_directory_without_manifests_is_invalid_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.md").write_text("# nothing")
    done = karpy("simulate", "-f", str(tmp_path / "empty"))
    assert done.returncode == 2
    assert "empty: no manifest in the directory" in done.stderr and "-R" in done.stderr
    assert done.stdout == ""


def test_fail_on_unschedulable_exits_3_and_still_prints_the_plan(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    # no kwok type has 1000 CPUs: the giant stays unschedulable
    scenario.write_text(
        "\n---\n".join((KWOK_POOL, deployment("web"), deployment("giant", 1, "1000")))
    )
    plain = karpy("simulate", "-f", str(scenario), "-o", "json")
    assert plain.returncode == 0, plain.stderr
    strict = karpy("simulate", "-f", str(scenario), "-o", "json", "--fail-on-unschedulable")
    assert strict.returncode == 3, strict.stderr
    same, stricter = json.loads(plain.stdout), json.loads(strict.stdout)
    for key in ("nodeClaims", "unschedulable", "cost"):
        assert stricter[key] == same[key], key
    assert [u["pod"] for u in stricter["unschedulable"]] == ["default/giant-0"]
    assert "1 pods stay unschedulable" in strict.stderr
    # everything placed: 0 even with the flag
    (tmp_path / "ok.yaml").write_text("\n---\n".join((KWOK_POOL, deployment("web"))))
    ok = karpy("simulate", "-f", str(tmp_path / "ok.yaml"), "--fail-on-unschedulable")
    assert ok.returncode == 0, ok.stderr


def test_an_ec2nodeclass_scenario_plans_on_ec2_types_by_default(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("\n---\n".join((AWS_POOL, deployment("web", 3))))
    done = karpy("simulate", "-f", str(scenario), "-o", "json")
    assert done.returncode == 0, done.stderr
    claims = json.loads(done.stdout)["nodeClaims"]
    assert claims
    for claim in claims:
        # EC2 names (family.size) and zones of the shipped snapshot's default region
        assert "." in claim["offering"]["instanceType"], claim["offering"]
        assert claim["offering"]["zone"].startswith("us-east-1"), claim["offering"]


def test_an_ec2nodeclass_scenario_refuses_a_kwok_catalogue_file(tmp_path: Path) -> None:
    catalog = karpy("catalog", "export", "--provider", "kwok")
    assert catalog.returncode == 0, catalog.stderr
    (tmp_path / "kwok.json").write_text(catalog.stdout)
    scenario = tmp_path / "s.yaml"
    scenario.write_text("\n---\n".join((AWS_POOL, deployment("web"))))
    done = karpy("simulate", "-f", str(scenario), "--instance-types", str(tmp_path / "kwok.json"))
    assert done.returncode == 2
    assert "not an AWS catalogue" in done.stderr and "EC2NodeClass" in done.stderr
    assert "--instance-types aws[:REGION]" in done.stderr
    assert done.stdout == ""


def test_a_kwoknodeclass_scenario_refuses_the_aws_catalogue(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("\n---\n".join((KWOK_POOL, deployment("web"))))
    done = karpy("simulate", "-f", str(scenario), "--instance-types", "aws")
    assert done.returncode == 2
    assert "an AWS catalogue" in done.stderr and "KWOKNodeClass" in done.stderr
    assert "no --instance-types" in done.stderr


def test_mixing_providers_is_refused_with_the_flags_for_each(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("\n---\n".join((KWOK_POOL, AWS_POOL, deployment("web"))))
    done = karpy("simulate", "-f", str(scenario))
    assert done.returncode == 2
    assert "mixes EC2NodeClass" in done.stderr and "NodePool 'aws'" in done.stderr
    assert "NodePool 'kwok'" in done.stderr and "--instance-types aws" in done.stderr
    assert done.stdout == ""


def test_max_rounds_help_counts_rounds() -> None:
    done = karpy("simulate", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout[done.stdout.index("--max-rounds") :].split())
    assert "stop after N rounds" in text


def test_standard_input_is_read_once(tmp_path: Path) -> None:
    done = karpy("simulate", "-f", "-", "-f", "-", stdin=KWOK_POOL)
    assert done.returncode == 2
    assert "standard input can be read only once" in done.stderr
    assert done.stdout == ""
