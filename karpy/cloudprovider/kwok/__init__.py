"""The kwok provider: fake instances as Node objects, for local runs, tests and demos.

`provider.KwokCloudProvider` launches instances as Nodes, `simulator.KwokSimulator` plays their
kubelets, `catalog` holds the built-in 144-type catalogue. The package imports nothing itself,
so `karpy simulate` can read the catalogue without loading the Kubernetes client.
"""
