"""A JSON plan written a megabyte at a time to the byte stream under `sys.stdout` is, byte for
byte, the plan written line by line through the text stream (how it was always written)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.scheduling.engine import schedule
from karpy.simulation import output
from karpy.simulation.output import render, write_plan
from karpy.simulation.scenario import load_scenario
from tests.unit.simulation.test_simulate import DEPLOYMENT, NODEPOOL

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
}
SPREAD = DEPLOYMENT.replace("replicas: 3", "replicas: 12").replace(
    "      containers:",
    "      topologySpreadConstraints:\n"
    "        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,"
    " whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}\n"
    "      containers:",
)

SCENARIOS = {
    "one-deployment": [NODEPOOL, DEPLOYMENT],
    "no-nodepool": [DEPLOYMENT],
    "unschedulable": [NODEPOOL, DEPLOYMENT.replace("cpu: 500m", "cpu: '5000'")],
    "existing-node": [NODEPOOL, yaml.safe_dump(NODE), DEPLOYMENT],
    "zonal-spread": [NODEPOOL, SPREAD],
    "nothing-to-place": [NODEPOOL],
}


def _plan(tmp_path: Path, docs: list[str]) -> tuple[object, object]:
    path = tmp_path / "s.yaml"
    path.write_text("\n---\n".join(docs))
    scenario = load_scenario([str(path)], instance_types=kwok_instance_types())
    result = schedule(scenario.input)
    result.errors = scenario.explain(result.errors)
    return scenario.input, result


@pytest.mark.parametrize("chunk", [output.CHUNK, 64])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_chunked_json_is_the_line_by_line_json(
    name: str, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inp, result = _plan(tmp_path, SCENARIOS[name])
    expected = render(inp, result, "json").encode()  # a StringIO: line by line, as before
    monkeypatch.setattr(output, "CHUNK", chunk)
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8")
    stream.write("before\n")  # written through the text stream first: stays first
    write_plan(stream, inp, result, "json")  # type: ignore[arg-type]
    stream.flush()
    assert raw.getvalue() == b"before\n" + expected
    assert expected.startswith(b"{\n") and expected.endswith(b"}\n")


def test_a_pipe_is_widened_and_anything_else_left_alone(tmp_path: Path) -> None:
    import fcntl
    import os

    read, write = os.pipe()
    try:
        with os.fdopen(write, "w") as out:
            output.widen_pipe(out)  # type: ignore[arg-type]
            assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) >= min(output.CHUNK, _pipe_max())
    finally:
        os.close(read)
    with (tmp_path / "f").open("w") as regular:
        output.widen_pipe(regular)  # not a pipe: nothing happens, nothing is raised
    output.widen_pipe(io.StringIO())  # no file descriptor at all


def _pipe_max() -> int:
    return int(Path("/proc/sys/fs/pipe-max-size").read_text())
