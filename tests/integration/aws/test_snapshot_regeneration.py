"""The shipped `--instance-types aws` snapshot is exactly what the hack script makes from moto's
recorded EC2 data with today's maths: a change to capacity, overhead or labels that forgets to
regenerate it fails here (run `hack/aws/snapshot_instance_types.py --moto`)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from types import ModuleType

from karpy.cloudprovider.aws.snapshot import snapshot_file_name

REPO = Path(__file__).resolve().parents[3]


def hack_script() -> ModuleType:
    path = REPO / "hack/aws/snapshot_instance_types.py"
    spec = importlib.util.spec_from_file_location("snapshot_instance_types", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_shipped_us_east_1_snapshot_is_regenerable(moto_server: str) -> None:
    entries = await hack_script().snapshot("us-east-1", moto_server)
    shipped_path = REPO / "karpy/cloudprovider/aws/data" / snapshot_file_name("us-east-1")
    shipped = json.loads(gzip.decompress(shipped_path.read_bytes()))
    regenerated = json.loads(json.dumps(entries, sort_keys=True))
    assert [e["name"] for e in regenerated] == [e["name"] for e in shipped]
    assert regenerated == shipped
