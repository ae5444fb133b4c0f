# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A member of the Karmada federation, as the platform sees it: where it is (the IDC or
the cloud), its region, its compliance zone and whether Karmada reports it Ready.

Rule held here:

* Rule federation-member (``read_member``): a member is read from its Karmada ``Cluster``
  (``cluster.karmada.io/v1alpha1``, Karmada v1.16.0 ``pkg/apis/cluster/v1alpha1/types.go``)
  by the labels a node of one cluster carries (``common/names``): the location
  ``platform.io/node-location``, the zone ``platform.io/compliance-zone``, the region
  ``topology.kubernetes.io/region`` (else the Cluster's own ``spec.region``). The same
  names on a member as on a node: one label, one meaning, whether it groups nodes or
  clusters. ``tools/localcluster/federation.py`` labels the members it joins this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    LABEL_COMPLIANCE_ZONE,
    LABEL_NODE_LOCATION,
    NODE_LOCATIONS,
    REGION_LABEL,
    dns_label_errors,
)

CLUSTER_API = "cluster.karmada.io/v1alpha1"
# The member locations, as the nodes of one cluster have them (platform.io/node-location).
IDC, CLOUD = NODE_LOCATIONS
# The condition Karmada's cluster status controller writes (types.go ClusterConditionReady).
READY_CONDITION = "Ready"
# Karmada refuses a longer Cluster name (pkg/apis/cluster/validation ValidateClusterName).
CLUSTER_NAME_MAX = 48


@dataclass(frozen=True)
class Member:
    """One member cluster: ``location`` is ``idc`` or ``cloud``; ``compliance_zone`` is
    only ever set on an IDC member."""

    name: str
    location: str
    region: str | None = None
    compliance_zone: str | None = None
    ready: bool = False

    @property
    def cloud(self) -> bool:
        return self.location == CLOUD


def cluster_ready(cluster: Mapping[str, Any] | None) -> bool:
    """Whether Karmada reports a ``Cluster`` (None: not there) ``Ready``."""
    status = (cluster or {}).get("status") or {}
    return any(
        c.get("type") == READY_CONDITION and c.get("status") == "True"
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    )


def member_errors(cluster: Mapping[str, Any]) -> list[FieldError]:
    """What rule federation-member refuses in a ``Cluster``, every problem at once."""
    meta = cluster.get("metadata") or {}
    name = meta.get("name") or ""
    labels = meta.get("labels") or {}
    where = f"clusters[{name}].metadata.labels"
    errors = dns_label_errors(f"clusters[{name}].metadata.name", name, max_len=CLUSTER_NAME_MAX)
    location = labels.get(LABEL_NODE_LOCATION)
    if location not in NODE_LOCATIONS:
        errors.append(
            FieldError(
                f"{where}.{LABEL_NODE_LOCATION}",
                f"{location!r}: a member is labelled {' or '.join(NODE_LOCATIONS)}; without it "
                "no placement can tell whether the member may take compliance work",
            )
        )
    zone = labels.get(LABEL_COMPLIANCE_ZONE)
    if zone is not None:
        errors += dns_label_errors(f"{where}.{LABEL_COMPLIANCE_ZONE}", zone)
        if location == CLOUD:
            errors.append(
                FieldError(
                    f"{where}.{LABEL_COMPLIANCE_ZONE}",
                    f"{zone!r} on a cloud member: a compliance zone is in the IDC only "
                    "(as rule node-group-spec says of a node group)",
                )
            )
    return errors


def read_member(cluster: Mapping[str, Any]) -> Member:
    """Rule federation-member: a Karmada ``Cluster`` as a ``Member``, from its labels
    ``platform.io/node-location`` (``idc`` or ``cloud``, required),
    ``platform.io/compliance-zone`` (IDC members only) and ``topology.kubernetes.io/region``
    (else ``spec.region``), and its ``Ready`` condition; raises on a member without a
    location or with a zone in the cloud."""
    raise_if(member_errors(cluster))
    meta = cluster.get("metadata") or {}
    labels = meta.get("labels") or {}
    region = labels.get(REGION_LABEL) or (cluster.get("spec") or {}).get("region") or None
    return Member(
        name=meta["name"],
        location=labels[LABEL_NODE_LOCATION],
        region=region,
        compliance_zone=labels.get(LABEL_COMPLIANCE_ZONE),
        ready=cluster_ready(cluster),
    )


def read_members(clusters: list[Mapping[str, Any]]) -> list[Member]:
    """Every member, by name; raises with the problems of every ``Cluster`` together."""
    errors = [e for c in clusters for e in member_errors(c)]
    raise_if(errors)
    return sorted((read_member(c) for c in clusters), key=lambda m: m.name)


def cluster_labels(
    location: str, region: str | None = None, zone: str | None = None
) -> dict[str, str]:
    """The labels a ``Cluster`` carries for rule federation-member (what the local
    federation writes when it joins a member)."""
    labels = {LABEL_NODE_LOCATION: location}
    if region:
        labels[REGION_LABEL] = region
    if zone:
        labels[LABEL_COMPLIANCE_ZONE] = zone
    return labels
