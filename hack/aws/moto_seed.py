"""Seed a moto server with what an EC2NodeClass discovers, for `karpy run` with PROVIDER=aws.

    python hack/aws/moto_seed.py --endpoint-url http://127.0.0.1:5000 --cluster demo

Creates a VPC with one subnet per zone (us-east-1a..c) and a security group, both tagged
`karpenter.sh/discovery=<cluster>`, the IAM role `KarpenterNodeRole-<cluster>` and the EKS
cluster `<cluster>` (karpy reads its endpoint when `CLUSTER_ENDPOINT` is not set). moto has no
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
    args = parser.parse_args()
    kwargs = {
        "endpoint_url": args.endpoint_url,
        "region_name": args.region,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    ec2 = boto3.client("ec2", **kwargs)
    tags = [{"Key": "karpenter.sh/discovery", "Value": args.cluster}]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    for i, suffix in enumerate("abc"):
        ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=f"10.0.{i}.0/24",
            AvailabilityZone=f"{args.region}{suffix}",
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}],
        )
    ec2.create_security_group(
        GroupName="nodes",
        Description="nodes",
        VpcId=vpc,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": tags}],
    )
    subnets = [
        s["SubnetId"]
        for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]
    ]
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
    # The EKS cluster karpy asks for its endpoint and CA when CLUSTER_ENDPOINT is not set.
    boto3.client("eks", **kwargs).create_cluster(
        name=args.cluster,
        version="1.33",
        roleArn=f"arn:aws:iam::123456789012:role/{args.cluster}-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
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
