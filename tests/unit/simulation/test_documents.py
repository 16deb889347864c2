"""Decoding scenario files: what exports carry and the simulation never reads is dropped."""

from __future__ import annotations

import json
from pathlib import Path

from karpy.simulation import documents
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


def test_every_field_a_used_kind_has_survives_the_trimming_decoder(tmp_path: Path) -> None:
    """JSON of the usual shape is decoded by a decoder that skips fields it does not name: the
    objects must be those the plain decoder gives, less what is dropped anyway."""
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "zonal", "uid": "u", "generation": 2, "finalizers": ["f"]},
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3"},
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": True,
        "mountOptions": ["debug"],
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "z", "values": ["a"]}]}],
    }
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t", "namespace": "n", "labels": {"a": "b"}},
        "template": {"spec": {"containers": [{"name": "c"}]}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "n",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": None,
            "ownerReferences": [{"kind": "ReplicaSet", "name": "r", "uid": "x"}],
            "resourceVersion": "7",
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"containers": [{"name": "c"}], "priority": 10**20, "x": 1.5},
        "status": {"phase": "Pending"},
    }
    f = tmp_path / "export.json"
    f.write_text(
        json.dumps({"kind": "List", "metadata": {}, "items": [storage_class, template, pod]})
    )
    got = [d.obj for d in read_documents([str(f)])]
    del pod["metadata"]["managedFields"]  # type: ignore[attr-defined]
    assert got == [storage_class, template, pod]
    assert documents._trimming().decode(f.read_bytes())["items"] == got, "decoded by it"


def test_objects_of_another_shape_are_decoded_as_they_are(tmp_path: Path) -> None:
    """`metadata: null` is not the trimming decoder's shape: the plain decoder reads the file."""
    odd = {"kind": "Pod", "metadata": None, "spec": {"containers": [{"name": "c"}]}}
    f = tmp_path / "odd.json"
    f.write_text(
        json.dumps(
            {
                "kind": "List",
                "items": [{"kind": "Namespace", "metadata": {"name": "a"}, "spec": 1}, odd],
            }
        )
    )
    docs = list(read_documents([str(f)], used=frozenset()))
    assert [d.obj for d in docs][1] == odd
