# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The named rules of a model service, each in one function.

Every rule returns the ``FieldError`` list for the input field it is about, so a
caller collects all of them and refuses before the first write. The canary
rules are KServe's own (``validateCanarySpecs`` in KServe 0.20's
``inference_service_validation.go``), checked here so the error names the
module's field instead of coming back from the webhook as a sentence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    OBJECT_STORE_NAME,
    PLATFORM_NAMESPACE,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    VOLCANO_NAMESPACE,
    namespace_name,
)
from ..jobs.classes import JobClass
from ..jobs.spot_price import spot_price_errors
from .spec import Canary, ModelVersion, ServiceSpec

# Classes a model service may run at: large needs a gang and a hard topology, and
# debug never preempts; neither fits a service that holds its GPUs for good.
INFERENCE_CLASSES = ("critical", "normal", "spot")


def default_class(queue_type: str, critical_allowed: bool = True) -> str:
    """Rule inference-default-class (design 5.3): a model in a subscription team queue is
    critical inference, where the tenant may run critical work at all (namespace label
    ``platform.io/allow-critical``, which policy queue-priority reads); anywhere else
    normal. Never spot: a spot service is reclaimed whenever paying demand needs its GPUs,
    which a caller must choose, with a price (rule inference-spot-priced); in a spot queue
    the default is refused by inference-class-fits-queue, which says so."""
    if queue_type in (QUEUE_TYPE_TEAM, QUEUE_TYPE_SUBSCRIPTION):
        return "critical" if critical_allowed else "normal"
    return "normal"


def spot_priced_errors(job_class: str, spot_price: object) -> list[FieldError]:
    """Rule inference-spot-priced: a spot service carries its bid per GPU-hour (rule
    spot-price's bounds); reclaim takes the cheapest spot pods first, and a service with no
    price cannot be spot. Any other class takes no price."""
    if job_class == "spot":
        if spot_price is None:
            return [
                FieldError(
                    "spot_price",
                    "a spot service is reclaimable: its pods are deleted, cheapest first, whenever "
                    "paying demand needs their GPUs; give its price per GPU-hour (for example '0.3')",
                )
            ]
        return spot_price_errors(spot_price)
    if spot_price is not None:
        return [
            FieldError(
                "spot_price",
                f"class {job_class} is not billed as spot; leave spot_price out or use class spot",
            )
        ]
    return []


def class_errors(
    job_class: str, queue: str, queue_type: str, table: Mapping[str, JobClass]
) -> list[FieldError]:
    """Rule inference-class-fits-queue: an inference class, and one the queue's type allows."""
    if job_class not in INFERENCE_CLASSES or job_class not in table:
        return [
            FieldError(
                "job_class",
                f"{job_class!r} is not a class for a model service; use one of {', '.join(INFERENCE_CLASSES)}",
            )
        ]
    allowed = table[job_class].queue_types
    if queue_type not in allowed:
        fits = [c for c in INFERENCE_CLASSES if c in table and queue_type in table[c].queue_types]
        spot = (
            " (a spot service is reclaimed whenever paying demand needs its GPUs: say job_class: spot "
            "and give spot_price)"
            if fits == ["spot"]
            else ""
        )
        return [
            FieldError(
                "job_class",
                f"{job_class} runs only in {', '.join(allowed)} queues, and {queue} is a {queue_type} queue; "
                f"use {' or '.join(fits) or 'another queue'}{spot}",
            )
        ]
    return []


def critical_errors(job_class: str, critical_allowed: bool, namespace: str) -> list[FieldError]:
    """Rule inference-critical-allowed: critical only where the platform allows the tenant
    critical work; the admission policy would refuse every predictor pod's PodGroup."""
    if job_class != "critical" or critical_allowed:
        return []
    return [
        FieldError(
            "job_class",
            f"critical is not enabled for namespace {namespace} (label platform.io/allow-critical, the tenant "
            "module's allow_critical); use normal, or ask the platform to allow critical work",
        )
    ]


def needs_store(stable: ModelVersion, canaries: Sequence[Canary]) -> bool:
    """Whether a version of the service is in an S3 bucket (``s3://``)."""
    return any(m.storage_uri.startswith("s3://") for m in (stable, *(c.model for c in canaries)))


def store_account(account: Mapping[str, Any] | None) -> str | None:
    """Rule model-store-account: a service given no ``service_account`` whose models are
    in S3 (``needs_store``) runs as the tenant's object-store ServiceAccount when the tenant
    has one (gpucloud.platform.tenant_object_store makes it): KServe's storage initializer
    then reads the tenant's keys and endpoint through it. Without one, none (KServe's
    default account, as before)."""
    return OBJECT_STORE_NAME if account is not None else None


def traffic_errors(canaries: Sequence[Canary]) -> list[FieldError]:
    """Rule inference-traffic: the canaries' shares add up to at most 100; the stable
    version takes the rest."""
    total = sum(c.traffic_percent for c in canaries)
    if total <= 100:
        return []
    parts = " + ".join(str(c.traffic_percent) for c in canaries)
    return [
        FieldError(
            "canaries[].traffic_percent",
            f"{parts} = {total} is over 100; the stable version takes 100 minus the canaries' share",
        )
    ]


def traffic_split(spec: ServiceSpec) -> dict[str, int]:
    """Rule traffic-split: version -> percent of requests; the stable version takes what
    the canaries leave."""
    split = {spec.stable.version: 100 - sum(c.traffic_percent for c in spec.canaries)}
    split.update({c.model.version: c.traffic_percent for c in spec.canaries})
    return split


def canary_name_errors(spec: ServiceSpec) -> list[FieldError]:
    """Rule inference-canary-unique: every canary version is named once, and not as the
    stable one (the name is the canary's Deployment)."""
    errors, seen = [], {spec.stable.version: "model.version"}
    for i, canary in enumerate(spec.canaries):
        name = canary.model.version
        if name in seen:
            errors.append(
                FieldError(
                    f"canaries[{i}].version",
                    f"{name!r} is already {seen[name]}; name each version once",
                )
            )
        else:
            seen[name] = f"canaries[{i}].version"
    return errors


def canary_replica_errors(spec: ServiceSpec) -> list[FieldError]:
    """Rule inference-canary-min-replicas: a canary never keeps more replicas than the
    stable version (KServe refuses it too)."""
    stable = spec.autoscaling.min_replicas
    return [
        FieldError(
            f"canaries[{i}].min_replicas",
            f"{c.min_replicas} is above the stable version's min_replicas ({stable})",
        )
        for i, c in enumerate(spec.canaries)
        if c.min_replicas is not None and c.min_replicas > stable
    ]


def knative_errors(spec: ServiceSpec) -> list[FieldError]:
    """Rule knative-one-canary: Knative mode splits between the latest revision and the
    one before it, so it has one canary at most, and it scales on concurrency or rps."""
    errors = []
    if spec.mode == "knative" and len(spec.canaries) > 1:
        errors.append(
            FieldError(
                "canaries",
                f"{len(spec.canaries)} canaries; Knative mode takes one (canaryTrafficPercent)",
            )
        )
    return errors


def version_errors(spec: ServiceSpec, known: Mapping[str, str]) -> list[FieldError]:
    """Rule inference-version-immutable: a version name stands for one storageUri for good.
    ``known`` maps the versions the service ever had (its history and its live spec) to
    their storageUri; a new model gets a new version name."""
    errors = []
    paths = [("model", spec.stable)] + [
        (f"canaries[{i}]", c.model) for i, c in enumerate(spec.canaries)
    ]
    seen: dict[str, str] = dict(known)
    for path, model in paths:
        before = seen.get(model.version)
        if before is not None and before != model.storage_uri:
            errors.append(
                FieldError(
                    f"{path}.storage_uri",
                    f"version {model.version} is {before}, not {model.storage_uri}; give the new model a "
                    "new version name",
                )
            )
        seen.setdefault(model.version, model.storage_uri)
    return errors


def canary_replicas(canary: Canary, stable_min: int) -> int:
    """KServe's ``canaryReplicaCount``: the canary's own min_replicas, else the stable
    minimum times its traffic share, rounded up."""
    if canary.min_replicas is not None:
        return canary.min_replicas
    return math.ceil(stable_min * canary.traffic_percent / 100)


def stable_replicas(spec: ServiceSpec) -> int:
    """The stable Deployment's minimum: KServe lowers it by the canaries' replicas, to one
    at least, so the total stays the stable minimum."""
    low = spec.autoscaling.min_replicas
    if not spec.canaries:
        return low
    return max(low - sum(canary_replicas(c, low) for c in spec.canaries), 1)


def footprint(spec: ServiceSpec) -> tuple[int, int | None]:
    """GPUs the service holds at its minimum, and at its maximum (None: no maximum)."""
    low = spec.autoscaling.min_replicas
    canary_gpus = sum(canary_replicas(c, low) * c.model.gpus for c in spec.canaries)
    at_min = stable_replicas(spec) * spec.stable.gpus + canary_gpus
    high = spec.autoscaling.max_replicas
    at_max = None if high is None else high * spec.stable.gpus + canary_gpus
    return at_min, at_max


def capability_errors(spec: ServiceSpec, capability: int | None) -> list[FieldError]:
    """Rule inference-gpus-within-capability: the GPUs the service holds at its minimum fit
    the queue's capability (``capability`` None: the queue sets none). Volcano would
    leave the rest Pending for good."""
    if capability is None:
        return []
    at_min = footprint(spec)[0]
    if at_min <= capability:
        return []
    return [
        FieldError(
            "model.gpus",
            f"the service needs {at_min} GPUs at its minimum ({_breakdown(spec)}), above the capability of "
            f"queue {spec.queue} ({capability})",
        )
    ]


def replica_bound_errors(spec: ServiceSpec, capability: int | None) -> list[FieldError]:
    """Rule inference-replicas-bounded: at ``max_replicas`` the service fits the queue's
    capability. Replicas above it could never run: they would only sit Pending, and an
    autoscaler could make thousands of them."""
    at_max = footprint(spec)[1]
    if capability is None or at_max is None or at_max <= capability or not spec.stable.gpus:
        return []
    canary_gpus = at_max - spec.autoscaling.max_replicas * spec.stable.gpus  # type: ignore[operator]
    most = max((capability - canary_gpus) // spec.stable.gpus, 0)
    return [
        FieldError(
            "autoscaling.max_replicas",
            f"{spec.autoscaling.max_replicas} replicas would hold {at_max} GPUs, above the capability of "
            f"queue {spec.queue} ({capability}); at most {most} can ever run there",
        )
    ]


def _breakdown(spec: ServiceSpec) -> str:
    low = spec.autoscaling.min_replicas
    parts = [f"{stable_replicas(spec)} x {spec.stable.gpus} for {spec.stable.version}"]
    parts += [
        f"{canary_replicas(c, low)} x {c.model.gpus} for {c.model.version}" for c in spec.canaries
    ]
    return " + ".join(parts)


def spec_errors(spec: ServiceSpec, known: Mapping[str, str]) -> list[FieldError]:
    """Every rule that needs only the input and the service's known versions."""
    return (
        traffic_errors(spec.canaries)
        + canary_name_errors(spec)
        + canary_replica_errors(spec)
        + knative_errors(spec)
        + version_errors(spec, known)
    )


def admitted_namespaces(policy: Mapping | None) -> set[str]:
    """The namespaces a service's serving NetworkPolicy admits on its first ingress rule
    (the serving port; ``manifests.serving_network_policy`` writes the gateway's there)."""
    ingress = ((policy or {}).get("spec") or {}).get("ingress") or []
    if not ingress:
        return set()
    names: set[str] = set()
    for peer in ingress[0].get("from") or []:
        for expression in (peer.get("namespaceSelector") or {}).get("matchExpressions") or []:
            if expression.get("key") == "kubernetes.io/metadata.name":
                names |= set(expression.get("values") or [])
    return names


def graph_namespace_errors(namespace: str, admitted: Mapping[str, set[str]]) -> list[FieldError]:
    """Rule graph-in-gateway-namespace: an A/B graph and its router run in a namespace every
    routed service admits as its gateway (``admitted``: service -> namespaces), so never in
    kube-system, another tenant's namespace or anywhere its router could not reach the
    services from."""
    shut = sorted(service for service, names in admitted.items() if namespace not in names)
    if not shut:
        return []
    gateways = sorted(set.intersection(*admitted.values())) if admitted else []
    return [
        FieldError(
            "namespace",
            f"{namespace} is not a gateway namespace of {', '.join(shut)} (they admit "
            f"{', '.join(gateways) or 'no common one'}); the graph runs where the serving gateway "
            "runs (rule graph-in-gateway-namespace)",
        )
    ]


# Namespaces of the cluster's and the platform's own control objects (leases, history,
# policy parameters, the scheduler): no serving gateway or monitoring stack runs there.
CONTROL_NAMESPACES = (
    "kube-system",
    "kube-public",
    "kube-node-lease",
    PLATFORM_NAMESPACE,
    VOLCANO_NAMESPACE,
)


def peer_namespace_errors(option: str, namespace: object) -> list[FieldError]:
    """Rule serving-peer-namespace: a namespace a service's NetworkPolicy admits
    (``gateway_namespaces``, ``monitoring_namespace``) is one where the platform's serving
    gateway or monitoring runs: never a tenant namespace (its pods would reach the model
    and, since rule graph-in-gateway-namespace trusts the gateways, ``inference_graph``
    would run a router there) nor a control namespace of Kubernetes or the platform."""
    if not isinstance(namespace, str) or not namespace:
        return []
    if namespace.startswith(namespace_name("")):
        kind = "a tenant namespace"
    elif namespace in CONTROL_NAMESPACES:
        kind = "a control namespace of Kubernetes or the platform"
    else:
        return []
    return [
        FieldError(
            option,
            f"{namespace!r} is {kind}; expected a namespace where the serving gateway or the "
            "monitoring stack runs, such as platform-serving or monitoring "
            "(rule serving-peer-namespace)",
        )
    ]


def graph_owner_errors(tenant: str, name: str, live: Mapping[str, Any] | None) -> list[FieldError]:
    """Rule graph-of-own-tenant: the InferenceGraph ``<tenant>-<name>`` a run would write or
    delete (``live``, None when there is none) is one the platform made for ``tenant``.
    Graph names only prefix the tenant, so tenant ``a``'s graph ``b-x`` and tenant ``a-b``'s
    graph ``x`` share a name; the labels, which only the platform writes, tell them apart."""
    if live is None:
        return []
    labels = (live.get("metadata") or {}).get("labels") or {}
    owner = labels.get(LABEL_TENANT)
    if labels.get(LABEL_MANAGED_BY) == MANAGED_BY and owner == tenant:
        return []
    full = (live.get("metadata") or {}).get("name")
    kind = f"tenant {owner}'s graph" if owner else "a graph the platform did not make"
    return [
        FieldError(
            "name",
            f"{name!r} addresses InferenceGraph {full}, which is {kind}; expected a graph of "
            f"tenant {tenant} or none (rule graph-of-own-tenant)",
        )
    ]
