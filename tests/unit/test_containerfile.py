"""The Containerfile, read without a container engine: its command line is one karpy accepts,
its bases are pinned by digest and it runs as a non-root user."""

from __future__ import annotations

import re

import pytest

from karpy import __version__
from karpy.cli import parse as parse_cli
from tests.containerfile import REPO, container_argv, container_env, load, parse

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def test_entrypoint_is_karpy_and_default_command_is_run() -> None:
    final = load().final
    assert final.entrypoint == ["karpy"]
    assert final.cmd == ["run"]
    argv = container_argv({}, final)
    assert argv == ["karpy", "run"]
    assert parse_cli(argv[1:]).command == "run"
    # a different subcommand given as args reuses the entrypoint
    assert container_argv({"args": ["version"]}, final) == ["karpy", "version"]


def test_every_base_image_is_pinned_by_digest() -> None:
    stages = load().stages
    assert len(stages) >= 2
    for stage in stages:
        assert DIGEST.search(stage.base), f"FROM {stage.base} is not pinned by digest"


def test_runs_as_a_non_root_user_without_writing_bytecode() -> None:
    final = load().final
    assert final.user is not None
    uid = final.user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, final.user
    assert final.env.get("PYTHONDONTWRITEBYTECODE") == "1"  # read-only root filesystem
    assert final.env["PATH"].startswith("/opt/venv/bin:")


def test_chart_app_version_is_karpys_version() -> None:
    chart = (REPO / "manifests" / "charts" / "karpy" / "Chart.yaml").read_text()
    assert re.search(rf"^appVersion: {re.escape(__version__)}$", chart, re.M)


def test_an_unknown_subcommand_or_flag_is_refused_by_the_cli_parser() -> None:
    with pytest.raises(SystemExit) as exc:
        parse_cli(["serve"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        parse_cli(["run", "--no-such-flag"])


def test_parser_handles_args_continuations_and_shell_form_is_refused() -> None:
    text = (
        "ARG BASE=img@sha256:" + "a" * 64 + "\n"
        "# comment\n"
        "FROM ${BASE} AS build\n"
        "FROM $BASE\n"
        "ENV A=1 \\\n    B=two\n"
        'ENTRYPOINT ["x", \\\n "y"]\n'
    )
    cf = parse(text)
    assert [s.base for s in cf.stages] == ["img@sha256:" + "a" * 64] * 2
    assert cf.stages[0].name == "build"
    assert cf.final.env == {"A": "1", "B": "two"}
    assert cf.final.entrypoint == ["x", "y"]
    assert container_argv({"command": ["sh"], "args": ["-c", "true"]}, cf.final) == [
        "sh",
        "-c",
        "true",
    ]
    with pytest.raises(ValueError, match="exec"):
        parse("FROM a\nENTRYPOINT karpy run\n")


def test_container_env_fills_the_downward_api_and_refuses_unknown_sources() -> None:
    container = {
        "env": [
            {"name": "A", "value": "1"},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ]
    }
    assert container_env(container, {"metadata.namespace": "karpenter"}) == {
        "A": "1",
        "NS": "karpenter",
    }
    secret = {"env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "x", "key": "y"}}}]}
    with pytest.raises(ValueError, match="env S"):
        container_env(secret, {})
