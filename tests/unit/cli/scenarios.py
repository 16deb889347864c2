"""Small scenarios for the installed-command tests."""

from __future__ import annotations

KWOK_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: kwok}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
"""

AWS_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: aws}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


def deployment(name: str, replicas: int = 2, cpu: str = "1") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  template:
    spec:
      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""
