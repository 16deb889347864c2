"""NodeClass resolution's pure parts: tag filters, alias SSM parameter names, and which AMI wins
per requirement set (deprecation, then creation date, then name)."""

from __future__ import annotations

from datetime import UTC, datetime

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.v1.common import Condition
from karpy.cloudprovider.aws.nodeclass import (
    NodeClassResolution,
    alias_parameters,
    best_amis,
    filters_for_tags,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_tag_filters_turn_star_into_tag_key() -> None:
    assert filters_for_tags({"karpenter.sh/discovery": "prod", "Name": "*"}) == [
        {"Name": "tag-key", "Values": ["Name"]},
        {"Name": "tag:karpenter.sh/discovery", "Values": ["prod"]},
    ]


def test_alias_parameter_names() -> None:
    latest = {p.name: p.arch for p in alias_parameters("al2023", "latest", "1.33")}
    assert (
        latest[
            "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
        ]
        == "amd64"
    )
    assert (
        latest[
            "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id"
        ]
        == "arm64"
    )
    assert len(latest) == 5
    pinned = [p.name for p in alias_parameters("al2023", "v20240625", "1.33")]
    assert (
        "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/"
        "amazon-eks-node-al2023-x86_64-standard-1.33-v20240625/image_id"
    ) in pinned
    br = [p.name for p in alias_parameters("bottlerocket", "v1.20.0", "1.33")]
    assert "/aws/service/bottlerocket/aws-k8s-1.33/arm64/1.20.0/image_id" in br
    assert "/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.20.0/image_id" in br
    assert next(p.name for p in alias_parameters("bottlerocket", "latest", "1.33")) == (
        "/aws/service/bottlerocket/aws-k8s-1.33/x86_64/latest/image_id"
    )


def image(
    id_: str, created: str, *, arch: str = "x86_64", name: str = "n", deprecated: str | None = None
) -> dict[str, str]:
    out = {"ImageId": id_, "CreationDate": created, "Architecture": arch, "Name": name}
    if deprecated:
        out["DeprecationTime"] = deprecated
    return out


def test_newest_non_deprecated_ami_wins_per_requirement_set() -> None:
    amis = best_amis(
        [
            (image("ami-old", "2025-01-01T00:00:00.000Z"), ()),
            (
                image(
                    "ami-new-deprecated",
                    "2025-06-01T00:00:00.000Z",
                    deprecated="2025-12-01T00:00:00Z",
                ),
                (),
            ),
            (image("ami-mid", "2025-03-01T00:00:00.000Z"), ()),
            (image("ami-arm", "2024-01-01T00:00:00.000Z", arch="arm64"), ()),
            (image("ami-i386", "2026-01-01T00:00:00.000Z", arch="i386"), ()),
        ],
        NOW,
    )
    assert [a.id for a in amis] == ["ami-mid", "ami-arm"]
    assert amis[0].requirements[0].values == ["amd64"]
    only_deprecated = best_amis(
        [(image("ami-d", "2025-06-01T00:00:00.000Z", deprecated="2025-12-01T00:00:00Z"), ())], NOW
    )
    assert [(a.id, a.deprecated) for a in only_deprecated] == [("ami-d", True)]
    future = best_amis(
        [(image("ami-f", "2025-06-01T00:00:00.000Z", deprecated="2027-01-01T00:00:00Z"), ())], NOW
    )
    assert future[0].deprecated is None


def test_apply_keeps_transition_times_of_unchanged_conditions() -> None:
    earlier, later = datetime(2025, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)

    def cond(type_: str, status: str, at: datetime) -> Condition:
        return Condition(
            type=type_, status=status, reason=type_, message="", last_transition_time=at
        )  # type: ignore[arg-type]

    nodeclass = EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "subnetSelectorTerms": [{"id": "subnet-1"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "r",
            },
            "status": {
                "conditions": [
                    cond("SubnetsReady", "True", earlier).to_dict(),
                    cond("AMIsReady", "False", earlier).to_dict(),
                ]
            },
        }
    )
    result = NodeClassResolution(
        conditions=[cond("SubnetsReady", "True", later), cond("AMIsReady", "True", later)]
    )
    applied = result.apply(nodeclass)
    assert applied.status is not None
    times = {c.type: c.last_transition_time for c in applied.status.conditions or []}
    assert times == {"SubnetsReady": earlier, "AMIsReady": later}
