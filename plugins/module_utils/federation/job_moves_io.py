# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_job_moves``'s reads and writes with a ``kube.Cluster`` connected to
the Karmada API server (its pure steps: ``federation.job_moves``).

* gather: one LIST of the platform's PropagationPolicies (``platform.io/managed-by``) and
  one of every ResourceBinding, across namespaces: the bindings are Karmada's, read only;
* apply: the changed job policies by server-side apply, concurrently (each is one job's,
  so no order matters); in check mode the API server's dry runs. Not pure.
"""

from __future__ import annotations

from typing import Any

from ..common.names import MANAGED_SELECTOR
from ..hybrid.federation_moves import BINDING_API
from ..hybrid.federation_placement import POLICY_API
from ..kube import cluster as kube
from ..queues.plan import UPDATE
from ..tenants.changes import Changes
from ..tenants.write_io import reported_part_way
from .batches_io import write_batches
from .job_moves import JobMovesFacts, JobMovesRequest, JobMovesRun, record_plan, result


def gather_job_moves(request: JobMovesRequest, cluster: kube.Cluster) -> JobMovesFacts:
    """The platform's PropagationPolicies and Karmada's ResourceBindings, one LIST each."""
    policies = cluster.list(POLICY_API, "PropagationPolicy", label_selector=MANAGED_SELECTOR)
    bindings = cluster.list(BINDING_API, "ResourceBinding")
    return JobMovesFacts(policies=tuple(policies), bindings=tuple(bindings))


def apply_job_moves(
    request: JobMovesRequest, planned: JobMovesRun, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    """The writes, concurrently; a failure after a write reports what was written."""
    changes = Changes()
    record_plan(planned, changes)
    batch = [(move.policy, UPDATE, move.live) for move in planned.writes]
    with reported_part_way("recording the federated jobs' moves", changes):
        write_batches(cluster, [batch] if batch else [], changes, check_mode, True)
    return result(planned, changes)
