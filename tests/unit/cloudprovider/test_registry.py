"""The provider registry: each plugin declares its NodeClass kinds; unknown names are refused."""

from __future__ import annotations

import pytest

from karpy.apis.descriptors import AKSNODECLASSES, EC2NODECLASSES, KWOKNODECLASSES
from karpy.cloudprovider.registry import PLUGINS, ProviderUnavailableError, get_plugin


def test_each_plugin_serves_its_own_nodeclass_kind() -> None:
    assert get_plugin("kwok").nodeclasses == (KWOKNODECLASSES,)
    assert get_plugin("aws").nodeclasses == (EC2NODECLASSES,)
    assert get_plugin("azure").nodeclasses == (AKSNODECLASSES,)
    assert {get_plugin(name).name for name in PLUGINS} == set(PLUGINS)


def test_an_unknown_provider_is_refused_by_name() -> None:
    with pytest.raises(ProviderUnavailableError, match="PROVIDER=gcp"):
        get_plugin("gcp")
