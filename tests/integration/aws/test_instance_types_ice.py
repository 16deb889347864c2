"""The ICE cache is laid over the built instance types: a spot interruption or a failed launch
marks one offering without rebuilding the ~1,400 types (which takes most of a second on the
event loop), and a whole capacity type can still be ruled out."""

from __future__ import annotations

import time

from tests.integration.aws.test_instance_types import (  # noqa: F401  (fixture)
    Catalog,
    by_name,
    catalog,
)

ZONES = {"us-east-1a", "us-east-1b", "us-east-1c"}


async def test_marking_an_offering_changes_only_its_type(
    catalog: Catalog,  # noqa: F811
) -> None:
    catalog.clock.now += 1000  # past any mark an earlier test left
    before = by_name(await catalog.provider.list(zones=ZONES))
    catalog.unavailable.mark_unavailable("spot", "m5.xlarge", "us-east-1b")
    started = time.process_time()
    after = by_name(await catalog.provider.list(zones=ZONES))
    seconds = time.process_time() - started
    assert after.keys() == before.keys()
    changed = {name for name in after if after[name] is not before[name]}
    assert changed == {"m5.xlarge"}
    marked = {
        (o.zone, o.capacity_type)
        for o in after["m5.xlarge"].offerings
        if o.available
        != next(
            b.available
            for b in before["m5.xlarge"].offerings
            if (b.zone, b.capacity_type) == (o.zone, o.capacity_type)
        )
    }
    assert marked == {("us-east-1b", "spot")}
    assert after["m5.xlarge"].requirements == before["m5.xlarge"].requirements
    assert after["m5.xlarge"].allocatable == before["m5.xlarge"].allocatable
    assert seconds < 0.2, f"laying the ICE cache over the types took {seconds:.3f} s of CPU"

    catalog.clock.now += 180
    expired = by_name(await catalog.provider.list(zones=ZONES))
    assert all(o.available for o in expired["m5.xlarge"].offerings if o.zone in ZONES)


async def test_a_whole_capacity_type_can_be_ruled_out(catalog: Catalog) -> None:  # noqa: F811
    catalog.clock.now += 1000
    catalog.unavailable.mark_capacity_type_unavailable("spot")
    types = await catalog.provider.list(zones=ZONES)
    assert not any(o.available for t in types for o in t.offerings if o.capacity_type == "spot")
    assert any(o.available for t in types for o in t.offerings if o.capacity_type == "on-demand")
    catalog.clock.now += 180
    types = await catalog.provider.list(zones=ZONES)
    assert any(o.available for t in types for o in t.offerings if o.capacity_type == "spot")
