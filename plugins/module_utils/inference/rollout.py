# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``inference_service`` through the flow contract (``kube.flow``), its pure steps:
the request, the facts as data and back, the plan (every decision and every refusal) and
what the plan says (no I/O).

The facts are what the run reads, one GET each, and a read is made only when the decision
needs it (``next_read``), in the order today's run made them: the InferenceService, its
GPU-utilisation HPA, its NetworkPolicy and (with a gateway namespace) its canary router;
then, for ``state: present``, the tenant's queue list (``platform-queues``), its
Namespace (may it run critical work) and the queue and its ancestors up to root (rule
effective-capability). Nothing more is read once the decision refuses. ``service``'s gather
reads what ``next_read`` names until it names nothing; ``plan_service`` decides from the
same facts with the same walk, so a fact not read is one the decision does not look at.

The tenant's A/B InferenceGraphs that follow the service's stable version (rule
inference-routes-follow-versions) are listed by a run after its writes, as they always
were; ``gathered`` lists them too (``graphs``), so that ``parsed`` says which graphs the
run would re-route.

Offline, ``gathered`` returns the facts as read and ``parsed`` plans from such facts: the
change another cluster would get, reviewed without connecting. There is no ``rendered``:
a service is judged by its tenant's queue list and its queue's capability.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import PlatformValidationError, Refused, raise_if
from ..common.names import LABEL_TENANT, MANAGED_SELECTOR, namespace_name
from ..common.objects import differs
from ..jobs.classes import DEFAULT_CLASSES
from ..jobs.spot_price import price_text
from ..kube.flow import GATHERED, fact_lists
from . import live as livemod
from .inputs import model_of, validate_service
from .manifests import (
    gpu_util_hpa,
    graph_name,
    inference_service,
    predictor_deployment,
    rerouted_graphs,
    rollout_graph,
    serving_network_policy,
    version_url,
)
from .placement import chain_capability, checked_class, tenant_queue_type
from .rules import (
    capability_errors,
    graph_owner_errors,
    needs_store,
    replica_bound_errors,
    spec_errors,
    store_account,
    traffic_split,
)
from .spec import (
    Autoscaling,
    ModelVersion,
    ServiceSpec,
    parse_autoscaling,
    parse_canaries,
    view,
)
from .versions import known_versions, plan, read_history

# The single objects the run reads (one GET each), in the order it reads them, with the
# key ``gathered`` returns each under.
SINGLE_KINDS = {
    "service": "inferenceservices",
    "hpa": "horizontalpodautoscalers",
    "policy": "networkpolicies",
    "router": "inferencegraphs",
    "queue_list": "configmaps",
    "namespace": "namespaces",
    "store_account": "serviceaccounts",
}
# What ``absent`` deletes, in order: the router first, the InferenceService last (KServe
# removes its Deployments).
REMOVAL_ORDER = ("InferenceGraph", "HorizontalPodAutoscaler", "NetworkPolicy", "InferenceService")
# What a service removes once it no longer needs it, in order.
REMOVABLE = ("HorizontalPodAutoscaler", "InferenceGraph")


@dataclass(frozen=True)
class ServiceRequest:
    """One ``inference_service`` run: the service present (an ``action``) or absent."""

    name: str
    tenant: str
    present: bool = True
    action: str = "deploy"
    queue: str | None = None
    job_class: str | None = None
    spot_price: Any = None
    mode: str = "standard"
    stable: ModelVersion | None = None
    # The canaries as given: a deploy's are parsed against its model, a canary action's
    # against the live stable version.
    canaries: tuple[Any, ...] | None = None
    autoscaling: Autoscaling = field(default_factory=Autoscaling)
    # The predictor pods' identity a deploy declares (rule inference-pod-identity); the
    # rollout actions keep the live service's.
    service_account: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    traffic: Mapping[str, Any] | None = None
    version: str | None = None
    gateways: tuple[str, ...] = ()
    monitoring_namespace: str | None = None
    serving_port: int = 8080
    metrics_port: int = 8080
    wait: bool = False
    wait_timeout: int = 600
    wait_sleep: int = 2
    # ``gathered``: read the tenant's A/B graphs too (a run lists them after its writes).
    reads_graphs: bool = False

    @property
    def namespace(self) -> str:
        return namespace_name(self.tenant)

    @property
    def gateway(self) -> str | None:
        """The namespace the canary router runs in: the first gateway namespace."""
        return self.gateways[0] if self.gateways else None

    @property
    def router_name(self) -> str:
        return graph_name(self.tenant, f"{self.name}-canary")

    @property
    def graph_selector(self) -> str:
        return f"{LABEL_TENANT}={self.tenant},{MANAGED_SELECTOR}"


@dataclass(frozen=True)
class ServiceFacts:
    """What the run read; a field is None when it was not read (the decision did not
    need it). Each single object is none or one; ``queues`` the queue and its ancestors as
    (name, the Queue or None) in the order read; ``graphs`` the tenant's InferenceGraphs
    of the gateway namespace (read by ``gathered`` only)."""

    service: tuple[Mapping[str, Any], ...] | None = None
    hpa: tuple[Mapping[str, Any], ...] | None = None
    policy: tuple[Mapping[str, Any], ...] | None = None
    router: tuple[Mapping[str, Any], ...] | None = None
    queue_list: tuple[Mapping[str, Any], ...] | None = None
    namespace: tuple[Mapping[str, Any], ...] | None = None
    # The tenant's object-store ServiceAccount (rule model-store-account)
    store_account: tuple[Mapping[str, Any], ...] | None = None
    queues: tuple[tuple[str, Mapping[str, Any] | None], ...] | None = None
    graphs: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class ServicePlan:
    """``present``: the manifests to apply in order, what to delete after them
    ((kind, namespace, name)), the A/B graphs to re-route (None: listed after the writes)
    and the service's block of the result; absent: what to delete, in order."""

    present: bool
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None = None
    writes: tuple[Mapping[str, Any], ...] = ()
    removals: tuple[tuple[str, str, str], ...] = ()
    reroutes: tuple[Mapping[str, Any], ...] | None = ()
    service: Mapping[str, Any] | None = None
    desired: ServiceSpec | None = None


def parse_service(params: Mapping[str, Any]) -> ServiceRequest:
    """The options as a request; raises for what rules service-name, model-spec and the
    action's required options refuse (``inputs.validate_service``). ``gathered`` and
    ``parsed`` are checked, and read or plan, as ``present``."""
    present = params.get("state", "present") != "absent"
    validate_service({**params, "state": "present" if present else "absent"})
    canaries = params.get("canaries")
    return ServiceRequest(
        name=params["name"],
        tenant=params["tenant"],
        present=present,
        action=params.get("action") or "deploy",
        queue=params.get("queue"),
        job_class=params.get("job_class"),
        spot_price=params.get("spot_price"),
        mode=params.get("mode", "standard"),
        stable=model_of(params)[0] if present else None,
        canaries=None if canaries is None else tuple(canaries),
        autoscaling=parse_autoscaling(params.get("autoscaling"))[0],
        service_account=params.get("service_account"),
        image_pull_secrets=tuple(params.get("image_pull_secrets") or ()),
        traffic=params.get("traffic"),
        version=params.get("version"),
        gateways=tuple(params.get("gateway_namespaces") or ()),
        monitoring_namespace=params.get("monitoring_namespace"),
        serving_port=params.get("serving_port", 8080),
        metrics_port=params.get("metrics_port", 8080),
        wait=bool(params.get("wait")),
        wait_timeout=params.get("wait_timeout", 600),
        wait_sleep=params.get("wait_sleep", 2),
        reads_graphs=params.get("state") == GATHERED,
    )


# --- the walk: what the decision reads, in order ------------------------------------------


class _Unread(Exception):
    """The decision needs a fact not read yet (``name``: the Queue to read)."""

    def __init__(self, kind: str, name: str | None = None):
        super().__init__(kind)
        self.kind = kind
        self.name = name


class _Reads:
    """The facts as the decision reads them. ``complete``: every fact there is was read
    (a plan), so a fact not read is none; otherwise (the walk of ``next_read``) reading it
    raises ``_Unread``."""

    def __init__(self, facts: ServiceFacts, complete: bool):
        self.facts = facts
        self.complete = complete

    def one(self, kind: str) -> Mapping[str, Any] | None:
        value = getattr(self.facts, kind)
        if value is None:
            if not self.complete:
                raise _Unread(kind)
            return None
        return value[0] if value else None

    def queue(self, depth: int, name: str) -> Mapping[str, Any] | None:
        """The ``depth``-th Queue of the way to root, ``name``."""
        reads = self.facts.queues or ()
        if depth < len(reads) and reads[depth][0] == name:
            return reads[depth][1]
        if not self.complete:
            raise _Unread("queues", name)
        return next((obj for read, obj in reads if read == name), None)


def _requested(
    request: ServiceRequest, queue: str, job_class: str, reads: _Reads
) -> ServiceSpec | None:
    stable = request.stable
    if stable is None:
        return None
    canaries = parse_canaries(_given(request.canaries), stable)[0]
    account = request.service_account
    if account is None and needs_store(stable, canaries):
        account = store_account(reads.one("store_account"))
    return ServiceSpec(
        name=request.name,
        tenant=request.tenant,
        queue=queue,
        job_class=job_class,
        stable=stable,
        canaries=canaries,
        autoscaling=request.autoscaling,
        mode=request.mode,
        spot_price=None if request.spot_price is None else price_text(request.spot_price),
        service_account=account,
        image_pull_secrets=request.image_pull_secrets,
    )


def _given(canaries: tuple[Any, ...] | None) -> list[Any] | None:
    return None if canaries is None else list(canaries)


def desired_manifests(
    request: ServiceRequest, spec: ServiceSpec, billing: str, history: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """InferenceService first; the NetworkPolicy before the pods need it; the HPA, then the
    canary router last."""
    out = [inference_service(spec, DEFAULT_CLASSES[spec.job_class], billing, history)]
    out.append(
        serving_network_policy(
            spec,
            list(request.gateways),
            request.monitoring_namespace,
            request.serving_port,
            request.metrics_port,
        )
    )
    hpa = gpu_util_hpa(spec)
    if hpa is not None:
        out.append(hpa)
    router = rollout_graph(spec, request.gateway) if request.gateway else None
    if router is not None:
        out.append(router)
    return out


def _at(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace"), meta["name"]


def named(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def rerouted(request: ServiceRequest, desired: ServiceSpec, graphs: Sequence[Any]) -> tuple:
    """The tenant's A/B graphs of the gateway namespace that the run rewrites, by rule
    inference-routes-follow-versions (``manifests.rerouted_graphs``)."""
    if request.gateway is None:
        return ()
    url = version_url(desired, desired.stable.version)
    return tuple(rerouted_graphs(list(graphs), desired.name, url))


def _decide(request: ServiceRequest, facts: ServiceFacts, complete: bool) -> ServicePlan:
    """The walk of the decision over ``facts`` (see ``_Reads``); raises for a refusal."""
    reads = _Reads(facts, complete)
    live = {
        "InferenceService": reads.one("service"),
        "HorizontalPodAutoscaler": reads.one("hpa"),
        "NetworkPolicy": reads.one("policy"),
        "InferenceGraph": reads.one("router") if request.gateway else None,
    }
    # The canary router is named <tenant>-<service>-canary: another tenant's may share it.
    raise_if(graph_owner_errors(request.tenant, request.name, live["InferenceGraph"]))
    isvc, hpa = live["InferenceService"], live["HorizontalPodAutoscaler"]
    live_spec = livemod.spec_from_live(isvc, livemod.hpa_target(hpa)) if isvc else None
    history = read_history((isvc or {}).get("metadata", {}).get("annotations"))
    before = view(live_spec, history)
    if not request.present:
        deletes = tuple(_at(live[k]) for k in REMOVAL_ORDER if live[k] is not None)
        return ServicePlan(False, before, removals=deletes)
    if live_spec is None and request.action != "deploy":
        # Said before the queue is looked up: a rollout step needs a service to step.
        plan(request.action, None, None, history)
    queue = request.queue or (live_spec.queue if live_spec else "")
    queue_type = tenant_queue_type(reads.one("queue_list"), request.tenant, queue)
    asked = (request.job_class, request.spot_price, request.action)
    namespace = reads.one("namespace") or {}
    job_class = checked_class(asked, live_spec, namespace, request.tenant, (queue, queue_type))
    return _planned(request, reads, live, live_spec, history, queue, queue_type, job_class)


def _planned(
    request: ServiceRequest,
    reads: _Reads,
    live: Mapping[str, Any],
    live_spec: ServiceSpec | None,
    history: list[dict[str, Any]],
    queue: str,
    queue_type: str,
    job_class: str,
) -> ServicePlan:
    """The service as the action leaves it, checked against its queue's capability, and
    the writes that get it there."""
    deploy = request.action == "deploy"
    requested = _requested(request, queue, job_class, reads) if deploy else None
    added: tuple = ()
    if request.action == "canary" and live_spec is not None:
        added, errors = parse_canaries(_given(request.canaries), live_spec.stable)
        raise_if(errors)
    desired, new_history = plan(
        request.action, requested, live_spec, history, request.traffic, request.version, added
    )
    capability = chain_capability(queue, reads.queue)
    raise_if(
        spec_errors(desired, known_versions(history, live_spec))
        + capability_errors(desired, capability)
        + replica_bound_errors(desired, capability)
    )
    billing = DEFAULT_CLASSES[job_class].billing_for(queue_type)
    manifests = desired_manifests(request, desired, billing, new_history)
    before, after = view(live_spec, history), view(desired, new_history)
    writes = [m for m in manifests if live[m["kind"]] is None or differs(m, live[m["kind"]])]
    if before != after and not any(m["kind"] == "InferenceService" for m in writes):
        writes.insert(0, manifests[0])
    wanted = {m["kind"] for m in manifests}
    removals = tuple(_at(live[k]) for k in REMOVABLE if live[k] is not None and k not in wanted)
    graphs = reads.facts.graphs
    if graphs is None and request.reads_graphs and request.gateway and not reads.complete:
        raise _Unread("graphs")
    reroutes = (
        None if graphs is None and request.gateway else rerouted(request, desired, graphs or ())
    )
    service = {
        "name": request.name,
        "namespace": request.namespace,
        "queue": queue,
        "job_class": job_class,
        "billing_type": billing,
        "current_version": desired.stable.version,
        "deployment": predictor_deployment(request.name, desired.stable.version),
        "traffic": traffic_split(desired),
        "router": next(
            (m["metadata"]["name"] for m in manifests if m["kind"] == "InferenceGraph"), None
        ),
    }
    return ServicePlan(True, before, after, tuple(writes), removals, reroutes, service, desired)


def next_read(request: ServiceRequest, facts: ServiceFacts) -> tuple[str, str | None] | None:
    """The fact the decision needs next and ``facts`` lack (with the name of the Queue to
    read), or None when the facts are enough to decide or to refuse."""
    try:
        _decide(request, facts, complete=False)
    except _Unread as unread:
        return unread.kind, unread.name
    except (PlatformValidationError, Refused):
        return None
    return None


def plan_service(request: ServiceRequest, facts: ServiceFacts) -> ServicePlan:
    """The run's decision: the service's writes and removals in order, or its removal;
    raises for every refusal, each before any write. A fact not read counts as none."""
    return _decide(request, facts, complete=True)


def report(request: ServiceRequest, planned: ServicePlan) -> dict[str, Any]:
    """What the plan does: its writes, in order, the service after it and the diff."""
    if not planned.present:
        writes = [named(*at) for at in planned.removals]
        return {"changed": bool(writes), "writes": writes, "diff": _diff(planned)}
    writes = [named(*_at(m)) for m in (*planned.writes,)]
    writes += [named(*at) for at in planned.removals]
    writes += [named(*_at(m)) for m in planned.reroutes or ()]
    return {
        "changed": bool(writes),
        "writes": writes,
        "service": dict(planned.service or {}),
        "diff": _diff(planned),
    }


def _diff(planned: ServicePlan) -> dict[str, Any]:
    return {"before": planned.before, "after": planned.after}


# --- the facts as data -------------------------------------------------------------------


def facts_out(facts: ServiceFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: each kind read, its objects whole (the
    Queues found on the way to root, in order; ``graphs``: the tenant's InferenceGraphs
    of the gateway namespace)."""
    out: dict[str, Any] = {}
    for kind, key in SINGLE_KINDS.items():
        value = getattr(facts, kind)
        if value is not None:
            out[key] = [dict(obj) for obj in value]
    if facts.queues is not None:
        out["queues"] = [dict(obj) for _name, obj in facts.queues if obj is not None]
    if facts.graphs is not None:
        out["graphs"] = [dict(obj) for obj in facts.graphs]
    return out


def facts_in(request: ServiceRequest, data: Mapping[str, Any]) -> ServiceFacts:
    """Facts given as ``gathered`` returned them (a missing kind is none; of a single
    object's kind, the first)."""
    keys = (*SINGLE_KINDS.values(), "queues", "graphs")
    read = fact_lists(data, *keys)
    lists = {key: read[i] for i, key in enumerate(keys)}
    singles = {kind: tuple(lists[key][:1]) for kind, key in SINGLE_KINDS.items()}
    queues = tuple(((q.get("metadata") or {}).get("name", ""), q) for q in lists["queues"])
    return ServiceFacts(**singles, queues=queues, graphs=lists["graphs"])
