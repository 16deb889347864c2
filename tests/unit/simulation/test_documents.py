"""Decoding scenario files: what exports carry and the simulation never reads is dropped."""

from __future__ import annotations

import json
from pathlib import Path

from karpy.simulation.documents import read_documents


def test_server_fields_are_dropped_while_reading(tmp_path: Path) -> None:
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "a": "b"},
        },
        "spec": {"containers": [{"name": "c"}]},
        "status": {
            "phase": "Pending",
            "nominatedNodeName": "n1",
            "conditions": [{"type": "PodScheduled"}],
        },
    }
    pool = {"kind": "NodePool", "metadata": {"name": "x"}, "status": {"conditions": []}}
    for name, text in (
        ("list.json", json.dumps({"kind": "List", "items": [pod, pool]})),
        ("docs.yaml", json.dumps(pod) + "\n---\n" + json.dumps(pool)),
    ):
        f = tmp_path / name
        f.write_text(text)
        got_pod, got_pool = (d.obj for d in read_documents([str(f)]))
        assert got_pod["metadata"] == {"name": "p", "annotations": {"a": "b"}}
        assert got_pod["status"] == {"phase": "Pending", "nominatedNodeName": "n1"}
        assert "status" not in got_pool
