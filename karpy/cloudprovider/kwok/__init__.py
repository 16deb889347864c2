"""The kwok provider: fake instances as Node objects, for local runs, tests and demos.

from karpy.cloudprovider.kwok import KwokCloudProvider, KwokSimulator
"""

from __future__ import annotations

from karpy.cloudprovider.kwok.instances import PROVIDER_ID_PREFIX, node_name_of, provider_id_of
from karpy.cloudprovider.kwok.provider import KWOKNODECLASSES, KwokCloudProvider
from karpy.cloudprovider.kwok.simulator import KwokSimulator

__all__ = [
    "KWOKNODECLASSES",
    "PROVIDER_ID_PREFIX",
    "KwokCloudProvider",
    "KwokSimulator",
    "node_name_of",
    "provider_id_of",
]
