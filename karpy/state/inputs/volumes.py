"""Volume topology: the zones (or nodes) a pod's persistent volumes tie it to.

kube-scheduler only binds a pod where its volumes can be reached: a claim bound to a
PersistentVolume needs a node matching the volume's `nodeAffinity`; an unbound claim of a
`WaitForFirstConsumer` StorageClass will be provisioned where the pod lands, inside the class's
`allowedTopologies`. A node launched anywhere else leaves the pod Pending, so both constraints
become node requirement alternatives of the pod (the pod may go wherever one alternative of every
volume holds). Built from plain collections, so the provisioner (informer cache) and
`karpy simulate` (scenario files) read volumes the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from karpy.scheduling.requirements import Requirement, RequirementError, Requirements

__all__ = ["DEFAULT_CLASS_ANNOTATION", "VolumeError", "VolumeTopology", "pod_claim_names"]

JSON = Mapping[str, Any]
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class VolumeError(ValueError):
    """A pod's volume cannot be resolved; the message names the field and the object."""


def _meta(obj: JSON) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def pod_claim_names(pod: JSON) -> list[tuple[str, str, JSON | None]]:
    """(volume field, claim name, inline claim template) of each claim-backed volume.

    A generic ephemeral volume's claim is named `<pod>-<volume>` and is created by the
    ephemeral-volume controller from the template; until it exists the template stands in.
    """
    meta = _meta(pod)
    out: list[tuple[str, str, JSON | None]] = []
    for i, vol in enumerate((pod.get("spec") or {}).get("volumes") or ()):
        ref = vol.get("persistentVolumeClaim")
        if ref:
            out.append((f"spec.volumes[{i}]", str(ref.get("claimName") or ""), None))
            continue
        ephemeral = vol.get("ephemeral")
        if ephemeral:
            template = ephemeral.get("volumeClaimTemplate") or {}
            name = f"{meta.get('name') or ''}-{vol.get('name') or ''}"
            out.append((f"spec.volumes[{i}]", name, template))
    return out


class VolumeTopology:
    """Looks up claims, volumes and classes and answers `terms(pod)`."""

    def __init__(
        self,
        *,
        claims: Iterable[JSON] = (),
        volumes: Iterable[JSON] = (),
        classes: Iterable[JSON] = (),
    ) -> None:
        self.claims: dict[tuple[str, str], JSON] = {
            (str(_meta(c).get("namespace") or "default"), str(_meta(c).get("name") or "")): c
            for c in claims
        }
        self.volumes: dict[str, JSON] = {str(_meta(v).get("name") or ""): v for v in volumes}
        self.classes: dict[str, JSON] = {str(_meta(s).get("name") or ""): s for s in classes}
        self.default_class = next(
            (
                name
                for name, sc in sorted(self.classes.items())
                if (_meta(sc).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
            ),
            None,
        )

    def terms(self, pod: JSON) -> tuple[Requirements, ...]:
        """The pod's volume requirement alternatives; empty when its volumes pin nothing.

        Raises `VolumeError` when a claim the pod mounts does not exist (an ephemeral volume's
        claim may be missing: its template is read instead) or is bound to a PersistentVolume
        that is not known (yet): the pod is then left out of the plan, not placed without its
        volume's topology.
        """
        if not (pod.get("spec") or {}).get("volumes"):
            return ()
        namespace = str(_meta(pod).get("namespace") or "default")
        alternatives = [Requirements()]
        for where, name, template in pod_claim_names(pod):
            claim = self.claims.get((namespace, name))
            if claim is None:
                if template is None:
                    raise VolumeError(
                        f"{where}.persistentVolumeClaim.claimName: PersistentVolumeClaim "
                        f'"{namespace}/{name}" not found'
                    )
                claim = template
            options = self._claim_terms(
                claim, f'{where}: PersistentVolumeClaim "{namespace}/{name}"'
            )
            if options:
                alternatives = [a.union(o) for a in alternatives for o in options]
        if alternatives == [Requirements()]:
            return ()
        return tuple(alternatives)

    def _claim_terms(self, claim: JSON, what: str) -> list[Requirements]:
        spec = claim.get("spec") or {}
        bound = spec.get("volumeName")
        if bound:
            pv = self.volumes.get(str(bound))
            if pv is None:
                # As Karpenter: the pod waits for the next pass rather than getting a node
                # that may sit in another zone than its volume.
                raise VolumeError(
                    f'{what} is bound to PersistentVolume "{bound}", which is not found (yet)'
                )
            affinity = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
            out = []
            for i, term in enumerate(affinity.get("nodeSelectorTerms") or ()):
                try:
                    out.append(
                        Requirements.from_node_selector_terms(term.get("matchExpressions") or ())
                    )
                except (RequirementError, ValueError) as err:
                    raise VolumeError(
                        f'{what}: PersistentVolume "{bound}": '
                        f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]: {err}"
                    ) from None
            return out
        # No storageClassName: the default class (the admission plugin fills it in on a live
        # cluster); an explicit "" means no class at all.
        class_name = spec.get("storageClassName")
        if class_name is None:
            class_name = self.default_class
        sc = self.classes.get(str(class_name)) if class_name else None
        if sc is None or sc.get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
            return []
        return [
            Requirements(
                Requirement(
                    str(e.get("key") or ""),
                    complement=False,
                    values=[str(v) for v in e.get("values") or ()],
                )
                for e in term.get("matchLabelExpressions") or ()
            )
            for term in sc.get("allowedTopologies") or ()
        ]
