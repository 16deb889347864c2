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
- `nodeclass`: EC2NodeClass resolution (subnets, security groups, AMIs, instance profile) and
  its status conditions;
- `userdata`, `launch`: bootstrap user data per AMI family and launch templates named by content;
- `fleet`: the CreateFleet request for a NodeClaim and the reading of its answer;
- `instances`: `AWSInstances`, create/get/list/delete of EC2 instances as the provider contract
  asks;
- `errors`: botocore's ClientError and its code;
- `clients`: aioboto3 clients with an optional endpoint (moto) and a per-client hook.

The package imports nothing itself, so `karpy simulate` loads only what the snapshot needs.
"""
