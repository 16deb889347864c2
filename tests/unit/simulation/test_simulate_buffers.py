"""`karpy simulate --disruption` with CapacityBuffers (their room stays, no more) and with
LimitRanges (their defaults count in the fresh-cluster estimate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.kit import capacitybuffer, podtemplate
from tests.unit.simulation.test_simulate_disruption import (
    TYPES,
    node,
    nodepool,
    pod,
    price,
    run,
    write,
)


def _names(doc: dict[str, Any]) -> list[str]:
    return sorted(n["name"] for c in doc["commands"] for n in c["nodes"])


@pytest.mark.parametrize("buffered", [False, True])
def test_emptiness_keeps_the_one_empty_node_a_buffer_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], buffered: bool
) -> None:
    docs: list[dict[str, Any]] = [
        nodepool(),
        node("a", "c-2x-amd64-linux"),
        node("e1", "c-2x-amd64-linux"),
        node("e2", "c-2x-amd64-linux"),
        pod("a1", "a", "1500m"),
    ]
    if buffered:
        docs += [
            podtemplate("chunk", cpu="1"),
            capacitybuffer("room", podTemplateRef={"name": "chunk"}, replicas=1),
        ]
    doc = run(capsys, "-f", write(tmp_path, *docs))
    summary = doc["summary"]
    if buffered:
        # the 1-CPU chunk does not fit on a (0.4 CPU free): one empty node stays for it
        assert len(_names(doc)) == 1 and _names(doc)[0] in {"e1", "e2"}
        assert (summary["nodesBefore"], summary["nodesAfter"]) == (3, 2)
    else:
        assert _names(doc) == ["e1", "e2"]
        assert (summary["nodesBefore"], summary["nodesAfter"]) == (3, 1)


@pytest.mark.parametrize("buffered", [False, True])
def test_a_replacement_keeps_room_for_the_buffer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], buffered: bool
) -> None:
    docs: list[dict[str, Any]] = [
        nodepool(),
        node("big", "c-32x-amd64-linux"),
        pod("p", "big", "1"),
    ]
    if buffered:
        docs += [
            podtemplate("chunk", cpu="3"),
            capacitybuffer("room", podTemplateRef={"name": "chunk"}, replicas=2),
        ]
    doc = run(capsys, "-f", write(tmp_path, *docs))
    (command,) = doc["commands"]
    assert command["decision"] == "replace"
    room = TYPES[command["replacement"]["instanceType"]].allocatable["cpu"]
    # the pod's 1 CPU, plus the buffer's 2 x 3 CPU when there is one
    assert room >= (7000 if buffered else 1000)
    if not buffered:
        assert room < 4000
    # moves name the real pod only: the virtual pods never move
    assert [m["pod"] for m in command["moves"]] == ["default/p"]


def test_the_fresh_cluster_estimate_applies_limit_range_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = pod("p", "a", "1")
    del bare["spec"]["containers"][0]["resources"]
    limits = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "3"}}]},
    }
    docs = [nodepool(), node("a", "c-8x-amd64-linux"), bare]
    without = run(capsys, "-f", write(tmp_path, *docs))["summary"]["simulateCost"]
    with_defaults = run(capsys, "-f", write(tmp_path, *docs, limits))["summary"]["simulateCost"]
    assert without < price("c-4x-amd64-linux")
    assert with_defaults == pytest.approx(price("c-4x-amd64-linux"), abs=1e-5)
