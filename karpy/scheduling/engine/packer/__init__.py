"""Cost-aware packing of pods onto new nodes of one NodePool.

Karpenter fills NodeClaims first-fit in CPU-descending order and lets each grow until only its
largest instance types still fit. With one node shape that strands memory on early nodes and
CPU on late ones (1.37-1.44x the fluid bound on its own benchmark catalogue). Here the batch is
packed as a whole:

1. The fluid covering LP (`lp.py`, `plan.py`) over the pods sent to this pool says which node
   types an optimal fractional plan buys, how many, and the dual price of each resource.
2. That many nodes are opened up front, each aiming at one of those types.
3. Pods are placed largest first (by their share of the batch's demand), each on the
   least-loaded open node that can take it, so every node receives a similar mix and the
   resources run out together. Node-level constraints (hostname anti-affinity and spread, host
   ports, requirements pinned by earlier pods) are checked per node. Pods that fit nowhere open
   a node of the type the LP values most.

When pods are large relative to nodes, balancing strands capacity in every node, and the LP's
fractional mix of types can mislead (it does not know that only four 28Gi pods fit a 128Gi
node). So a batch is packed several ways - balanced, first fit decreasing, or best-aligned fit, with
the LP's node counts rounded down, up, or no nodes opened up front - and the cheapest plan is
kept. First fit scans the open nodes per pod, which is quadratic when thousands of nodes refuse
pods for their hostname constraints, so batches above 5,000 pods are packed balanced only.
Poorly filled nodes are then re-packed onto smaller ones when that is cheaper (`split.py`).
4. Each node finally gets every type that holds its pods, cheapest first, so the launch buys
   the cheapest type that fits what actually landed on it.
"""

from __future__ import annotations

from karpy.scheduling.engine.packer.items import FilledNode, Item, OpenNode
from karpy.scheduling.engine.packer.placement import Packer

__all__ = ["FilledNode", "Item", "OpenNode", "Packer"]
