# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_platform``'s reads and writes with a ``kube.Cluster`` connected to
the Karmada API server (its pure steps: ``federation.platform_federation``).

* gather: one LIST per kind of ``PLATFORM_KINDS``, selected by
  ``platform.io/managed-by=gpucloud-platform`` (the namespaced ones in volcano-system and
  platform-system, each only when Karmada holds it);
* apply: the plan's batches in order, each batch's server-side applies concurrently; in
  check mode the API server's dry runs. Not pure.
"""

from __future__ import annotations

from typing import Any

from ..common.names import MANAGED_SELECTOR
from ..common.objects import index_by_name
from ..kube import cluster as kube
from ..tenants.changes import Changes
from ..tenants.write_io import reported_part_way
from .batches_io import delete_batches, write_batches
from .platform_federation import (
    API_OF,
    NAMESPACED_KINDS,
    PLATFORM_KINDS,
    PLATFORM_NAMESPACES,
    FederationPlatformFacts,
    FederationPlatformRequest,
    FederationPlatformRun,
    record_plan,
)
from .run_report import result


def gather_federation_platform(
    request: FederationPlatformRequest, cluster: kube.Cluster
) -> FederationPlatformFacts:
    """The platform's objects in Karmada, one LIST per kind and platform namespace (none
    in a namespace Karmada does not hold)."""
    objects: dict[str, Any] = {}
    for api_version, kind in PLATFORM_KINDS:
        if kind in NAMESPACED_KINDS:
            found = [
                item
                for namespace in PLATFORM_NAMESPACES
                if namespace in objects["Namespace"]
                for item in cluster.list(
                    api_version, kind, namespace=namespace, label_selector=MANAGED_SELECTOR
                )
            ]
        else:
            found = cluster.list(api_version, kind, label_selector=MANAGED_SELECTOR)
        objects[kind] = index_by_name(found)
    return FederationPlatformFacts(objects=objects)


def apply_federation_platform(
    request: FederationPlatformRequest,
    planned: FederationPlatformRun,
    cluster: kube.Cluster,
    check_mode: bool,
) -> dict[str, Any]:
    """The writes, batch after batch; a failure after a write reports what was written
    (``PartialWrite``). In check mode every write is the API server's dry run, except the
    namespaced objects while Karmada lacks one of the platform's namespaces, which are only
    reported."""
    changes = Changes()
    record_plan(planned, changes)
    with reported_part_way("writing the platform in the federation", changes):
        write_batches(cluster, planned.writes, changes, check_mode, planned.facts.namespace_exists)
        delete_batches(cluster, planned.deletes, API_OF, changes, check_mode)
    return result(changes)
