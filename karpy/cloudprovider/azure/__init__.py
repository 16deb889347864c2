"""The Azure provider (issue 34), first slice: Resource SKU records turned into capacity,
allocatable and labels as the upstream Azure provider computes them (`skus`). Launch, the ARM
clients and the provider plugin come next; `docs/getting-started/azure.md` says what works.
"""
