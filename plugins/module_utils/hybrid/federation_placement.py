# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where Karmada may put a job: the ``placement`` of the PropagationPolicy the platform
writes for one Volcano Job, from the job's placement name (the names of one cluster,
``hybrid/placement``), and whether Karmada may move it after it failed.

Rules held here:

* Rule federation-placement (``federation_placement``): which members, in which order,
  and that the job lands whole in one member that Karmada has checked can hold it.
* Rule federation-failover-once (``federation_failover``): which jobs Karmada may move to
  another member when they fail there, or when their member is lost, and that it does so
  at most once; the others are held where they are, with the reason on the Cluster.
* Rule federation-member-failover (``member_failover_taint_policy``): when Karmada calls a
  member lost, and what marks it so.

What Karmada v1.16.0 does with these fields, read from its source (paths under
``github.com/karmada-io/karmada@v1.16.0``):

* Ordered groups. ``pkg/scheduler/scheduler.go``
  ``scheduleResourceBindingWithClusterAffinities`` runs the whole schedule
  (``core.genericScheduler.Schedule``: filter, score, ``SelectClusters``,
  ``AssignReplicas``) with the first ``clusterAffinities`` term (the filter plugin
  ``pkg/scheduler/framework/plugins/clusteraffinity/cluster_affinity.go`` ``Filter``
  takes the term named by the status it is handed), and moves to the next term when
  that returns any error, a term whose members cannot hold the replicas included. A term that succeeds is remembered in the binding's
  ``status.schedulerObservedAffinityName`` and later schedules start from it
  (``pkg/scheduler/helper.go`` ``getAffinityIndex``): a job that went to the cloud term
  stays scheduled with that term. When every term fails, the observed term is left as it
  was, so the next attempt starts from the first term again.
* Capacity is checked only when replicas are divided. ``pkg/scheduler/core/
  spreadconstraint/select_clusters.go`` ``SelectBestClusters`` ignores the members'
  available replicas when ``replicaSchedulingType`` is ``Duplicated`` (or
  ``replicaScheduling`` is unset: ``shouldIgnoreAvailableResource``), and
  ``pkg/scheduler/core/assignment.go`` ``assignByDuplicatedStrategy`` gives every
  selected member all the replicas without a check: a Duplicated gang lands on the
  best-scored member whether or not it fits. With ``Divided`` + ``Aggregated``,
  ``select_clusters_by_cluster.go`` ``selectBestClustersByCluster`` with ``maxGroups: 1``
  takes the best-scored member and, when its available replicas are fewer than the
  job's, swaps in the member with the most (``selectClustersByAvailableResource``); when
  none has enough it fails ("no enough resource when selecting 1 clusters"), which is the
  error that moves the schedule to the next ``clusterAffinities`` term.
  ``assignByDynamicStrategy`` then gives that one member every replica.
* Available replicas come from ``pkg/scheduler/core/util.go`` ``calAvailableReplicas``:
  the smallest answer of the estimators; the general one
  (``pkg/estimator/client/general.go`` ``maxAvailableReplicas``) divides the member's
  ``status.resourceSummary`` (allocatable less allocated and allocating, summed over
  the member's nodes) by the job's per-pod request, or uses the member's resource models
  (``CustomizedClusterResourceModeling``, beta, on by default). It knows neither node
  fragmentation (unless the scheduler-estimator runs) nor the member's Volcano queues:
  Karmada's "can hold" is free resources, not the tenant's quota there.
* ``pkg/scheduler/core/common.go`` ``AssignReplicas`` assigns replicas only when the
  binding has replicas or requirements and at most one component; so the job's
  ResourceInterpreterCustomization must report them (``federation/interpreter``), and the
  ``MultiplePodTemplatesScheduling`` gate (alpha, off by default) must stay off: with it
  on, ``pkg/detector/detector.go`` ``applyReplicaInterpretation`` takes the built-in
  Volcano Job ``componentResource`` instead and a job of two tasks is copied to every
  selected member unassigned.
* A member that is not Ready carries Karmada's ``cluster.karmada.io/not-ready`` (or
  ``unreachable``) NoSchedule taint (``pkg/controllers/cluster/cluster_controller.go``),
  and the policy tolerates neither, so such a member is filtered out.
* Cluster failover. ``pkg/controllers/taint/clustertaintpolicy_controller.go`` puts the
  taints of a ``ClusterTaintPolicy`` on a Cluster whose conditions match its
  ``addOnConditions`` and takes them off on ``removeOnConditions`` (it runs only with the
  ``Failover`` gate, beta and off by default). ``pkg/controllers/cluster/taint_manager.go``
  (``needEvictionWithCurrentTime``) evicts a binding from a member with a NoExecute taint
  its policy's ``clusterTolerations`` do not tolerate (with the gate and
  ``--enable-no-execute-taint-eviction``, off by default), with the purge mode of the
  policy's ``failover.cluster`` (``getPurgeMode``); ``Directly`` removes the member from
  the binding before the scheduler places it again
  (``pkg/apis/work/v1alpha2/binding_types_helper.go`` ``GracefulEvictCluster``). A member
  is Ready ``False`` once Karmada has failed to reach it for ``--cluster-failure-threshold``
  (30 s by default, health checked every ``--cluster-status-update-frequency``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.names import (
    ANNOTATION_PLACEMENT,
    COMPLIANCE_RESTRICTED,
    LABEL_COMPLIANCE,
    LABEL_COMPLIANCE_ZONE,
    LABEL_MANAGED_BY,
    LABEL_NODE_LOCATION,
    MANAGED_BY,
    NODE_LOCATIONS,
)
from .placement import effective_placement

# The member locations, as the nodes of one cluster have them (platform.io/node-location).
IDC, CLOUD = NODE_LOCATIONS

POLICY_API = "policy.karmada.io/v1alpha1"
# clusterAffinities term names (qualified names of at most 32 characters,
# pkg/util/validation ValidateClusterAffinities).
IDC_TERM = "idc"
CLOUD_TERM = "cloud"
# Application failover: how long a job stays unhealthy in a member before Karmada moves
# it. Karmada's own default (DecisionConditions.TolerationSeconds): the built-in Volcano
# Job health interpretation calls a job unhealthy only in a phase outside its healthy
# list (Failed, or none yet), so waiting longer gains nothing and shorter buys no safety.
FAILOVER_TOLERATION_SECONDS = 300
# A job may be re-placed this many times; Karmada v1.16.0 has no such bound itself.
FAILOVER_BUDGET = 1
# The taint the platform's ClusterTaintPolicy puts on a member Karmada cannot reach (rule
# federation-member-failover); a job that may not move tolerates it and is held.
MEMBER_NOT_READY_TAINT = "platform.io/member-not-ready"
MEMBER_FAILOVER_POLICY = "gpucloud-platform-member-not-ready"
# What the platform's policies run under: Karmada's Cluster kind and its readiness.
READY_CONDITION = "Ready"
HELD = [{"key": MEMBER_NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute"}]
SPREAD_ONE_MEMBER = {"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}
WHOLE_IN_ONE_MEMBER = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Aggregated",
}


def _location_in(*locations: str) -> dict[str, Any]:
    return {"key": LABEL_NODE_LOCATION, "operator": "In", "values": list(locations)}


def _selector(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": [dict(e) for e in expressions]}}


def federation_placement(
    placement: str | None, compliance: bool = False, compliance_zone: str | None = None
) -> dict[str, Any]:
    """Rule federation-placement: IDC members only for local-only and compliance work,
    the IDC then the cloud for local-first, any member for cloud-ok, and always the whole
    job in one member Karmada has checked can hold it; the Karmada ``Placement`` of a
    job's PropagationPolicy.

    * ``local-only``, a compliance job, and a job without a placement (which in one
      cluster does not tolerate the cloud taint): ``clusterAffinity`` IDC members only
      (``platform.io/node-location In [idc]``; a member without the label is never
      chosen), and for a compliance zone the zone's members only;
    * ``local-first``: ``clusterAffinities`` in order, the IDC members, then the cloud
      members. Karmada tries the cloud term only when scheduling with the IDC term fails,
      and with the replica scheduling below that failure is "no IDC member has enough
      available replicas for the whole job" (``scheduleResourceBindingWithClusterAffinities``,
      ``selectBestClustersByCluster``; see the module docstring);
    * ``cloud-ok``: any member, IDC or cloud.

    Every placement lands the job whole in one member: ``spreadConstraints`` by cluster
    with ``minGroups: 1, maxGroups: 1`` and ``replicaScheduling`` ``Divided`` /
    ``Aggregated``. Divided, not Duplicated: only Divided makes Karmada check the chosen
    member's available replicas against the job's (``shouldIgnoreAvailableResource`` in
    ``spreadconstraint/select_clusters.go`` drops the check for Duplicated, and
    ``assignByDuplicatedStrategy`` in ``core/assignment.go`` assigns without one), and
    with one group Aggregated gives that member every replica. The job's replicas and
    per-pod requirement are the interpreter's (rule federation-job-replicas)."""
    placement = effective_placement(placement, compliance)
    out: dict[str, Any] = {}
    if compliance or placement in (None, "local-only"):
        expressions = [_location_in(IDC)]
        if compliance and compliance_zone:
            expressions.append(
                {"key": LABEL_COMPLIANCE_ZONE, "operator": "In", "values": [compliance_zone]}
            )
        out["clusterAffinity"] = _selector(*expressions)
    elif placement == "local-first":
        out["clusterAffinities"] = [
            {"affinityName": IDC_TERM, **_selector(_location_in(IDC))},
            {"affinityName": CLOUD_TERM, **_selector(_location_in(CLOUD))},
        ]
    elif placement == "cloud-ok":
        out["clusterAffinity"] = _selector(_location_in(IDC, CLOUD))
    else:
        raise ValueError(f"unknown placement {placement!r} (rule placement)")
    out["spreadConstraints"] = [dict(SPREAD_ONE_MEMBER)]
    out["replicaScheduling"] = dict(WHOLE_IN_ONE_MEMBER)
    return out


def federation_failover(
    placement: str | None, compliance: bool = False, spot: bool = False, replaced: int = 0
) -> dict[str, Any] | None:
    """Rule federation-failover-once: only cloud-ok and spot jobs are moved by Karmada,
    when they fail in a member or when their member is lost, and at most once; the
    ``failover`` of a job's PropagationPolicy, or None for none (the job is held: see
    ``job_propagation_policy``).

    Compliance, ``local-only``, ``local-first`` and placement-less jobs get none: Karmada
    never moves them. A compliance job is never moved to the cloud in any case: a
    re-placement stays within the same placement, which names IDC members only (rule
    federation-placement). ``cloud-ok`` and spot jobs that have not been re-placed yet
    get

    * ``application`` failover: after ``FAILOVER_TOLERATION_SECONDS`` unhealthy,
      ``purgeMode: Directly`` (the copy in the failed member is removed before the new
      one is made, so a gang never runs twice); the policy must then also set
      ``propagateDeps: true``, without which the application failover controller skips
      the binding (``pkg/controllers/applicationfailover/
      rb_application_failover_controller.go`` ``bindingFilter``);
    * ``cluster`` failover, ``purgeMode: Directly``: when their member carries the
      platform's NoExecute taint (rule federation-member-failover), the member is taken
      out of the job's binding first and the job is placed again among the members that
      are left. Karmada cannot delete the copy in a member it cannot reach: the Work is
      deleted at once and the member's copy when the member answers again.

    "Once" is the platform's, not Karmada's: v1.16.0's ``FailoverBehavior``
    (``pkg/apis/policy/v1alpha1/propagation_types.go``) has ``application``
    (``decisionConditions.tolerationSeconds``, ``purgeMode``, ``gracePeriodSeconds``,
    ``statePreservation``) and ``cluster`` (``purgeMode``, ``statePreservation``) and no
    count, and the controller (``detectFailure``, ``evictBinding``) evicts every time the
    job is unhealthy past the toleration. So the platform writes the policy again
    without ``failover`` once the job was re-placed: ``replaced`` is how many times it
    was (rule federation-moves-counted, ``hybrid.federation_moves``)."""
    placement = effective_placement(placement, compliance)
    if compliance or not (spot or placement == "cloud-ok"):
        return None
    if moved_enough(replaced):
        return None
    return {
        "application": {
            "decisionConditions": {"tolerationSeconds": FAILOVER_TOLERATION_SECONDS},
            "purgeMode": "Directly",
        },
        "cluster": {"purgeMode": "Directly"},
    }


def moved_enough(replaced: int) -> bool:
    """Rule federation-failover-once's bound: a job moved this many times moves no more."""
    return replaced >= FAILOVER_BUDGET


def member_failover_taint_policy() -> dict[str, Any]:
    """Rule federation-member-failover: a member is lost while Karmada calls it not Ready
    (``Ready`` ``False`` or ``Unknown``: it has not answered for the cluster failure
    threshold), and back once ``Ready`` is ``True``; the ``ClusterTaintPolicy`` that puts
    the NoExecute taint ``MEMBER_NOT_READY_TAINT`` on a lost member and takes it off when
    it is back. Every member is watched, IDC and cloud. What the taint does to a job is
    rule federation-failover-once's: moved once, or held (tolerated) where it is."""
    ready = {"conditionType": READY_CONDITION, "operator": "In"}
    return {
        "apiVersion": POLICY_API,
        "kind": "ClusterTaintPolicy",
        "metadata": {"name": MEMBER_FAILOVER_POLICY, "labels": {LABEL_MANAGED_BY: MANAGED_BY}},
        "spec": {
            "addOnConditions": [{**ready, "statusValues": ["False", "Unknown"]}],
            "removeOnConditions": [{**ready, "statusValues": ["True"]}],
            "taints": [{"key": MEMBER_NOT_READY_TAINT, "effect": "NoExecute"}],
        },
    }


def job_propagation_policy(
    job: dict[str, Any],
    placement: str | None,
    compliance: bool = False,
    compliance_zone: str | None = None,
    spot: bool = False,
    replaced: int = 0,
    record: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The PropagationPolicy of one Volcano Job (rules federation-placement and
    federation-failover-once), named after the job, in the job's namespace, selecting
    that job alone by name, labelled as the platform's (so the reconcile that counts its
    moves finds it) and carrying ``record``, its moves as far as the platform has seen
    them (rule federation-moves-counted): ``replaced`` is how many."""
    meta = job.get("metadata") or {}
    spec: dict[str, Any] = {
        "resourceSelectors": [
            {
                "apiVersion": job.get("apiVersion", "batch.volcano.sh/v1alpha1"),
                "kind": job.get("kind", "Job"),
                "name": meta["name"],
            }
        ],
        "placement": federation_placement(placement, compliance, compliance_zone),
    }
    failover = federation_failover(placement, compliance, spot, replaced)
    if failover is not None:
        spec["failover"] = failover
        spec["propagateDeps"] = True
    else:
        hold(spec)
    metadata: dict[str, Any] = {
        "name": meta["name"],
        "namespace": meta["namespace"],
        "labels": {LABEL_MANAGED_BY: MANAGED_BY},
    }
    if record:
        metadata["annotations"] = dict(record)
    return {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": metadata,
        "spec": spec,
    }


def hold(spec: dict[str, Any]) -> None:
    """Make a job policy's ``spec`` hold its job where it is: a lost member's NoExecute
    taint does not evict it (rule federation-member-failover); Karmada's own NoSchedule
    taints still keep new placements off a member that is not Ready."""
    spec.setdefault("placement", {})["clusterTolerations"] = [dict(t) for t in HELD]


def federated_job_policy(
    job: dict[str, Any],
    compliance_zone: str | None = None,
    spot: bool = False,
    replaced: int = 0,
    record: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The PropagationPolicy of a Volcano Job the platform built (``jobs/manifest``),
    read from the job itself: its placement annotation (the effective placement, rule
    placement) and its compliance label, so the federation places a job by the same
    names as one cluster does (rules federation-placement and federation-failover-once).
    ``spot``: the job runs in its tenant's spot queue; ``replaced`` and ``record``: its
    moves so far, from its live policy (rule federation-moves-counted)."""
    meta = job.get("metadata") or {}
    placement = (meta.get("annotations") or {}).get(ANNOTATION_PLACEMENT)
    compliance = (meta.get("labels") or {}).get(LABEL_COMPLIANCE) == COMPLIANCE_RESTRICTED
    return job_propagation_policy(
        job, placement, compliance, compliance_zone, spot, replaced, record
    )
