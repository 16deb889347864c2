"""Seed a moto server with what an EC2NodeClass discovers, for `karpy run` with PROVIDER=aws.

    python hack/aws/moto_seed.py --endpoint-url http://127.0.0.1:5000 --cluster demo

Tags the default VPC's subnets of three zones (us-east-1a..c) and its `default` security
group `karpenter.sh/discovery=<cluster>`, and creates the IAM role `KarpenterNodeRole-<cluster>`
and the EKS cluster `<cluster>` with the service CIDR `--service-cidr` (karpy reads its endpoint
when `CLUSTER_ENDPOINT` is not set, and the CIDR for AL2023's NodeConfig).
The default VPC's `default` group, because moto gives every spot instance that group whatever
its launch template names: with another group selected, each spot NodeClaim would be
`SecurityGroupDrift`ed (and replaced) a few seconds after it launched. moto has no
EKS-optimized AMI parameters, so it prints an amd64 Amazon Linux AMI id for the EC2NodeClass's
`amiSelectorTerms` (`- id: <ami>` with `amiFamily: AL2023`).
"""

from __future__ import annotations

import argparse
import json

import boto3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint-url", default="http://127.0.0.1:5000")
    parser.add_argument("--cluster", default="demo")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--service-cidr", default="10.100.0.0/16")
    args = parser.parse_args()
    kwargs = {
        "endpoint_url": args.endpoint_url,
        "region_name": args.region,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    ec2 = boto3.client("ec2", **kwargs)
    tags = [{"Key": "karpenter.sh/discovery", "Value": args.cluster}]
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]
    in_vpc = [{"Name": "vpc-id", "Values": [vpc["VpcId"]]}]
    zones = [f"{args.region}{suffix}" for suffix in "abc"]
    subnets = sorted(
        s["SubnetId"]
        for s in ec2.describe_subnets(Filters=in_vpc)["Subnets"]
        if s["AvailabilityZone"] in zones
    )
    group = ec2.describe_security_groups(
        Filters=[*in_vpc, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"][0]["GroupId"]
    ec2.create_tags(Resources=[*subnets, group], Tags=tags)
    iam = boto3.client("iam", **kwargs)
    iam.create_role(
        RoleName=f"KarpenterNodeRole-{args.cluster}",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )
    # The EKS cluster karpy asks for its endpoint and CA when CLUSTER_ENDPOINT is not set, and
    # for the service CIDR.
    boto3.client("eks", **kwargs).create_cluster(
        name=args.cluster,
        version="1.33",
        roleArn=f"arn:aws:iam::123456789012:role/{args.cluster}-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
        kubernetesNetworkConfig={"serviceIpv4Cidr": args.service_cidr},
    )
    images = ec2.describe_images(
        Owners=["amazon"],
        Filters=[
            {"Name": "architecture", "Values": ["x86_64"]},
            {"Name": "name", "Values": ["al2023-ami-2023*"]},
        ],
    )["Images"]
    print(sorted(i["ImageId"] for i in images)[0])


if __name__ == "__main__":
    main()
