# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_member``'s pure steps: parse, plan, report, summary (its reads and
writes: ``joining_io``).

Rules held here:

* Rule federation-member-join (``member_join``): what a Push-mode join writes in the
  member and in Karmada, and when a stored token is used again.
* Rule member-identity-kept (``identity_refusals``): a join never re-points or re-labels
  a member Karmada already has in a way that would move work. A Cluster of the same name
  with another API endpoint, another location or another compliance zone is refused: its
  bindings would follow the new endpoint or labels, and Karmada would take running jobs
  out of a member (its scheduler re-places what a member's labels no longer select). The
  region may change; no placement of the platform selects by region.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, Refused, raise_if
from ..common.names import LABEL_COMPLIANCE_ZONE, LABEL_MANAGED_BY, LABEL_NODE_LOCATION, MANAGED_BY
from ..common.summary import did
from ..kube.flow import Flow
from ..tenants.changes import CREATE, Changes, ObjectChange, object_changes
from ..tenants.live import TenantLive
from .member_join import (
    IMPERSONATOR_SA,
    cluster_object,
    impersonator_secret,
    join_secrets,
    member_objects,
    member_sa,
    secret_value,
    token_reusable,
)
from .members import cluster_labels, cluster_ready, member_errors
from .run_report import record_writes, result

MANAGED = {LABEL_MANAGED_BY: MANAGED_BY}
# Stands in a Secret for a token the apply step requests (and in check mode does not).
NEW_TOKEN = "<a token requested at apply>"
MEMBER_KINDS = (
    ("v1", "Namespace"),
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
)
# The options rule federation-member's problems are reported as (a Cluster's fields).
_OPTION_OF_FIELD = {
    "metadata.name": "name",
    f"metadata.labels.{LABEL_NODE_LOCATION}": "location",
    f"metadata.labels.{LABEL_COMPLIANCE_ZONE}": "compliance_zone",
}


@dataclass(frozen=True)
class JoinRequest:
    """The ``federation_member`` module's options, checked. ``member`` holds the member's
    connection options (``kubeconfig``, ``context``)."""

    name: str
    location: str
    member: Mapping[str, Any]
    region: str | None = None
    compliance_zone: str | None = None
    api_endpoint: str | None = None
    wait: bool = True
    wait_timeout: int = 120

    @property
    def labels(self) -> dict[str, str]:
        return {**cluster_labels(self.location, self.region, self.compliance_zone), **MANAGED}


@dataclass(frozen=True)
class MemberFacts:
    """What the run read in the member: its API server's address and CA as its connection
    has them, and Karmada's objects there (kind -> name -> object)."""

    endpoint: str
    ca: bytes | None
    objects: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class JoinFacts:
    """What the run read: the Cluster and the join Secrets in Karmada (None when not
    there), the member's side, and the time (for the tokens' lifetimes)."""

    cluster: Mapping[str, Any] | None
    secrets: Mapping[str, Mapping[str, Any]]
    member: MemberFacts
    now: float
    member_requests: int = 0  # the reads made in the member


@dataclass(frozen=True)
class JoinRun:
    """The plan: the member's writes (the Namespace, then the accounts and the binding),
    the accounts whose token is requested, then Karmada's writes (the Secrets, then the
    Cluster). A Secret holds ``NEW_TOKEN`` where a requested token goes."""

    facts: JoinFacts
    name: str
    endpoint: str
    member_writes: tuple[tuple[ObjectChange, ...], ...] = ()
    tokens: tuple[str, ...] = ()
    karmada_writes: tuple[tuple[ObjectChange, ...], ...] = ()


# -- parse -----------------------------------------------------------------------------------


def _as_option(error: FieldError, name: str) -> FieldError:
    path = error.field.removeprefix(f"clusters[{name}].")
    return FieldError(_OPTION_OF_FIELD.get(path, path), error.message)


def parse(params: Mapping[str, Any]) -> JoinRequest:
    """Every option checked at once, before the module connects; a member's name,
    location and zone by rule federation-member, as Karmada's Cluster would carry them."""
    request = JoinRequest(
        name=params.get("name") or "",
        location=params.get("location") or "",
        region=params.get("region") or None,
        compliance_zone=params.get("compliance_zone") or None,
        api_endpoint=params.get("api_endpoint") or None,
        member={
            "kubeconfig": params.get("member_kubeconfig"),
            "context": params.get("member_context"),
        },
        wait=bool(params.get("wait", True)),
        wait_timeout=120 if params.get("wait_timeout") is None else int(params["wait_timeout"]),
    )
    wanted = cluster_object(request.name, "https://member", request.labels, request.region)
    errors = [_as_option(e, request.name) for e in member_errors(wanted)]
    if request.api_endpoint is not None and not request.api_endpoint.startswith("https://"):
        errors.append(
            FieldError(
                "api_endpoint", f"{request.api_endpoint!r}: Karmada reaches a member over https://"
            )
        )
    if request.wait_timeout <= 0:
        errors.append(
            FieldError("wait_timeout", f"{request.wait_timeout}: a number of seconds above 0")
        )
    raise_if(errors)
    return request


# -- plan ------------------------------------------------------------------------------------


def identity_refusals(
    request: JoinRequest, live: Mapping[str, Any] | None, endpoint: str
) -> list[str]:
    """Rule member-identity-kept: a join never moves a member Karmada already has, so its
    API endpoint, its location and its compliance zone stay as they are; what would change
    is returned, each in a few words (none: the join may go on)."""
    if live is None:
        return []
    labels = (live.get("metadata") or {}).get("labels") or {}
    found = []
    have_endpoint = (live.get("spec") or {}).get("apiEndpoint")
    if have_endpoint and have_endpoint != endpoint:
        found.append(f"it points at {have_endpoint}, not {endpoint}")
    if labels.get(LABEL_NODE_LOCATION) not in (None, request.location):
        had = labels[LABEL_NODE_LOCATION]
        found.append(f"it is {'an' if had == 'idc' else 'a'} {had} member, not {request.location}")
    if labels.get(LABEL_COMPLIANCE_ZONE) != request.compliance_zone and (
        LABEL_NODE_LOCATION in labels
    ):
        found.append(
            f"its compliance zone is {labels.get(LABEL_COMPLIANCE_ZONE) or 'none'}, "
            f"not {request.compliance_zone or 'none'}"
        )
    return found


def _token(facts: JoinFacts, secret: str, account: str) -> str | None:
    """The stored token of ``account`` when it may be used again (rule
    federation-member-join), else None."""
    stored = secret_value(facts.secrets.get(secret), "token")
    sa = (facts.member.objects.get("ServiceAccount") or {}).get(account)
    if not stored or sa is None:
        return None
    token = stored.decode(errors="replace")
    return token if token_reusable(token, sa["metadata"]["uid"], facts.now) else None


def plan(request: JoinRequest, facts: JoinFacts) -> JoinRun:
    """Rule federation-member-join: a member is joined in Push mode as ``karmadactl join``
    joins one, writing only what differs, in order (in the member its Namespace, then its
    two accounts and their binding; then the tokens; then Karmada's two Secrets, then the
    Cluster), and requesting a token only for an account whose stored one may not be used
    again (``member_join.token_reusable``). A change rule member-identity-kept forbids is
    refused before anything is written."""
    endpoint = request.api_endpoint or facts.member.endpoint
    refusals = identity_refusals(request, facts.cluster, endpoint)
    if refusals:
        raise Refused(
            f"name: Karmada already has a member {request.name} and {'; '.join(refusals)}. "
            "A join does not move a member: its jobs would follow. Give the new member "
            "another name, or take this one out of the federation first",
            member=request.name,
        )
    if not facts.member.ca:
        raise Refused(
            "member_kubeconfig: its cluster has no certificate authority (certificate-authority "
            "or certificate-authority-data); Karmada would not know the member's API server "
            "from another",
            member=request.name,
        )
    in_member = member_objects(request.name, MANAGED)
    member_live = TenantLive(name="", objects={k: dict(v) for k, v in facts.member.objects.items()})
    member_writes = [
        object_changes([o for o in in_member if o["kind"] == "Namespace"], member_live),
        object_changes([o for o in in_member if o["kind"] != "Namespace"], member_live),
    ]
    sa = member_sa(request.name)
    token = _token(facts, request.name, sa)
    imp_token = _token(facts, impersonator_secret(request.name), IMPERSONATOR_SA)
    tokens = tuple(a for a, t in ((sa, token), (IMPERSONATOR_SA, imp_token)) if t is None)
    secrets = join_secrets(
        request.name, token or NEW_TOKEN, imp_token or NEW_TOKEN, facts.member.ca, MANAGED
    )
    karmada_live = TenantLive(
        name="",
        objects={
            "Secret": dict(facts.secrets),
            "Cluster": {request.name: dict(facts.cluster)} if facts.cluster is not None else {},
        },
    )
    wanted = cluster_object(request.name, endpoint, request.labels, request.region)
    karmada_writes = [
        object_changes(secrets, karmada_live),
        object_changes([wanted], karmada_live),
    ]
    return JoinRun(
        facts=facts,
        name=request.name,
        endpoint=endpoint,
        member_writes=tuple(tuple(b) for b in member_writes if b),
        tokens=tokens,
        karmada_writes=tuple(tuple(b) for b in karmada_writes if b),
    )


# -- report ----------------------------------------------------------------------------------


def _fingerprint(value: bytes | None) -> str:
    return f"sha256:{hashlib.sha256(value).hexdigest()[:12]}" if value else "(none)"


def shown(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A Secret as a diff shows it: each value as a fingerprint, never the value (a token
    to be requested as ``NEW_TOKEN``); any other object as it is."""
    if obj is None or obj.get("kind") != "Secret":
        return obj
    data = {}
    for key in obj.get("data") or {}:
        value = secret_value(obj, key)
        data[key] = NEW_TOKEN if value == NEW_TOKEN.encode() else _fingerprint(value)
    return {**obj, "data": data}


def record_plan(planned: JoinRun, changes: Changes) -> None:
    """Every write of the plan, in order (Secrets by fingerprint), as ``changes`` records them."""
    batches = (*planned.member_writes, *planned.karmada_writes)
    record_writes(
        [[(shown(m), action, shown(live)) for m, action, live in batch] for batch in batches],
        changes,
    )


def report(request: JoinRequest, planned: JoinRun) -> dict[str, Any]:
    """What a check-mode run reports."""
    changes = Changes()
    record_plan(planned, changes)
    return {
        **result(changes),
        "tokens": list(planned.tokens),
        "ready": cluster_ready(planned.facts.cluster),
    }


def federation_member_flow(
    gather: Callable[[JoinRequest, Any], JoinFacts],
    apply: Callable[[JoinRequest, JoinRun, Any, bool], dict[str, Any]],
) -> Flow[JoinRequest, JoinFacts, JoinRun]:
    """The module's flow over these pure steps and the I/O's ``gather`` and ``apply``."""
    return Flow(parse=parse, gather=gather, plan=plan, apply=apply, report=report)


# -- summary ---------------------------------------------------------------------------------


def federation_member_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """One line a person reads: the member, what the join wrote, whether Karmada calls it
    Ready."""
    where = params.get("location") or ""
    if params.get("region"):
        where += f", region {params['region']}"
    if params.get("compliance_zone"):
        where += f", compliance zone {params['compliance_zone']}"
    objects = result.get("objects") or []
    if not objects:
        done = "already joined, nothing changed"
    elif any(o.get("kind") == "Cluster" and o.get("action") == CREATE for o in objects):
        done = did(check_mode, "joined", "would be joined")
    else:
        done = did(check_mode, "join brought up to date", "join would be brought up to date")
    tokens = result.get("tokens") or []
    if tokens:
        done += f"; {did(check_mode, 'requested', 'would request')} {len(tokens)} new token(s) in the member"
    ready = (
        "Karmada reports it Ready"
        if result.get("ready")
        else "Karmada does not report it Ready yet"
    )
    return [f"member {params.get('name')} ({where}): {done}; {ready}"]
