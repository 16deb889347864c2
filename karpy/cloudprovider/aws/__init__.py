"""The AWS provider's building blocks (the provider class that plugs them in comes next).

- `capacity`: capacity and kubelet overhead of an EC2 instance type (ENI pods, VM overhead,
  kube-reserved bands, eviction threshold), from `DescribeInstanceTypes` and the EC2NodeClass;
- `labels`: the `karpenter.k8s.aws/instance-*` labels and the other well-known ones;
- `pricing`: the shipped on-demand table, the Price List refresh (never in an isolated VPC) and
  spot prices from `DescribeSpotPriceHistory`;
- `unavailable`: the 3-minute insufficient-capacity (ICE) cache;
- `instancetypes`: `InstanceTypeProvider`, the region's types with their offerings, refreshed
  every 12 hours;
- `snapshot`: the shipped offline snapshots `karpy simulate --instance-types aws` reads;
- `clients`: aioboto3 clients with an optional endpoint (moto) and a per-client hook.

The package imports nothing itself, so `karpy simulate` loads only what the snapshot needs.
"""
