# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_member``'s reads and writes (its pure steps: ``federation.joining``).
Two connections: the module's own, to the Karmada API server, and one to the member,
made of ``member_kubeconfig`` and ``member_context``.

* gather: in Karmada the Cluster and its two Secrets; in the member its address, its CA
  and Karmada's Namespace, accounts and binding there (one GET each: the names are
  known);
* apply: the member's writes, then the tokens (TokenRequest), then Karmada's writes,
  each batch concurrently; in check mode every write is a dry run and no token is
  requested; then, with ``wait``, the Cluster's Ready condition. Not pure.
"""

from __future__ import annotations

import base64
import time
from typing import Any

from ..common.errors import PartialWrite, Refused
from ..kube import cluster as kube
from ..tenants.changes import Changes
from ..tenants.write_io import reported_part_way
from .batches_io import write_batches
from .joining import (
    MEMBER_KINDS,
    NEW_TOKEN,
    JoinFacts,
    JoinRequest,
    JoinRun,
    MemberFacts,
    record_plan,
)
from .member_join import (
    CLUSTER_API,
    IMPERSONATOR_SA,
    KARMADA_CLUSTER,
    TOKEN_SECONDS,
    impersonator_secret,
    member_sa,
)
from .members import cluster_ready
from .run_report import result

WAIT_PERIOD = 2.0  # seconds between two reads of the Cluster's Ready condition


def member_cluster(request: JoinRequest, dry_run: bool) -> kube.Cluster:
    """The connection to the member (a dry run in check mode)."""
    options = {k: v for k, v in request.member.items() if v is not None}
    try:
        return kube.Cluster.from_options(options, dry_run=dry_run)
    except Exception as exc:
        # Making the client asks the member its version: the member, not Karmada, is the
        # server that did not answer.
        if kube.unreachable(exc):
            raise Refused(
                f"member_kubeconfig: {kube.unreachable_message(exc)} (the member's)"
            ) from exc
        if isinstance(exc, kube.CoreException):
            raise Refused(
                f"member_kubeconfig: no connection to the member can be made of it: {exc}"
            ) from exc
        raise


def _member_facts(request: JoinRequest, member: kube.Cluster) -> MemberFacts:
    names = {
        "Namespace": [(KARMADA_CLUSTER, None)],
        "ServiceAccount": [
            (member_sa(request.name), KARMADA_CLUSTER),
            (IMPERSONATOR_SA, KARMADA_CLUSTER),
        ],
        "ClusterRoleBinding": [(member_sa(request.name), None)],
    }
    objects: dict[str, dict[str, Any]] = {}
    for api_version, kind in MEMBER_KINDS:
        found = (member.get(api_version, kind, n, ns) for n, ns in names[kind])
        objects[kind] = {o["metadata"]["name"]: o for o in found if o is not None}
    return MemberFacts(endpoint=member.server, ca=member.ca_bundle(), objects=objects)


def gather_federation_member(request: JoinRequest, cluster: kube.Cluster) -> JoinFacts:
    """The Cluster and its Secrets in Karmada, and Karmada's objects in the member."""
    live = cluster.get(CLUSTER_API, "Cluster", request.name)
    secrets = {}
    for name in (request.name, impersonator_secret(request.name)):
        secret = cluster.get("v1", "Secret", name, KARMADA_CLUSTER)
        if secret is not None:
            secrets[name] = secret
    member = member_cluster(request, dry_run=False)
    try:
        facts = _member_facts(request, member)
    except kube.TransportError as exc:
        raise Refused(
            f"member_kubeconfig: the member's API server does not answer ({member.server}): {exc}"
        ) from exc
    return JoinFacts(
        cluster=live,
        secrets=secrets,
        member=facts,
        now=time.time(),
        member_requests=member.requests,
    )


def _with_tokens(planned: JoinRun, tokens: dict[str, str]) -> tuple[tuple[Any, ...], ...]:
    """Karmada's writes with each requested token in its Secret."""
    placeholder = base64.b64encode(NEW_TOKEN.encode()).decode()
    secret_of = dict(
        (
            (planned.name, member_sa(planned.name)),
            (impersonator_secret(planned.name), IMPERSONATOR_SA),
        )
    )
    batches = []
    for batch in planned.karmada_writes:
        out = []
        for manifest, action, live in batch:
            if manifest["kind"] == "Secret" and manifest["data"].get("token") == placeholder:
                token = tokens[secret_of[manifest["metadata"]["name"]]]
                manifest = {
                    **manifest,
                    "data": {
                        **manifest["data"],
                        "token": base64.b64encode(token.encode()).decode(),
                    },
                }
            out.append((manifest, action, live))
        batches.append(tuple(out))
    return tuple(batches)


def _wait_ready(request: JoinRequest, cluster: kube.Cluster, changes: Changes) -> bool:
    deadline = time.monotonic() + request.wait_timeout
    while True:
        live = cluster.get(CLUSTER_API, "Cluster", request.name)
        if cluster_ready(live):
            return True
        if time.monotonic() >= deadline:
            conditions = ((live or {}).get("status") or {}).get("conditions") or []
            why = (
                "; ".join(f"{c.get('reason')}: {c.get('message')}" for c in conditions)
                or "no status yet"
            )
            raise PartialWrite(
                f"waiting {request.wait_timeout}s for Karmada to report member {request.name} Ready",
                changes.done,
                TimeoutError(why),
            )
        time.sleep(WAIT_PERIOD)


def apply_federation_member(
    request: JoinRequest, planned: JoinRun, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    """The member's writes, the tokens, Karmada's writes, then (``wait``) Ready; a failure
    after a write reports what was written (``PartialWrite``)."""
    changes = Changes()
    record_plan(planned, changes)
    member = member_cluster(request, dry_run=check_mode)
    namespace_there = bool(planned.facts.member.objects.get("Namespace"))
    with reported_part_way(f"joining member {request.name}", changes):
        write_batches(member, planned.member_writes, changes, check_mode, namespace_there)
        tokens = (
            {}
            if check_mode
            else {
                a: member.request_token(a, KARMADA_CLUSTER, TOKEN_SECONDS) for a in planned.tokens
            }
        )
        karmada_writes = planned.karmada_writes if check_mode else _with_tokens(planned, tokens)
        write_batches(cluster, karmada_writes, changes, check_mode, True)
    ready = cluster_ready(planned.facts.cluster)
    if request.wait and not check_mode:
        ready = _wait_ready(request, cluster, changes)
    return {
        **result(changes),
        "tokens": list(planned.tokens),
        "ready": ready,
        "member_requests": planned.facts.member_requests + member.requests,
    }
