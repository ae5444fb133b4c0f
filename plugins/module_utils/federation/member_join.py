# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Push-mode join of a member cluster to Karmada writes, as data. Pure.

Rule held here:

* Rule federation-member-join: a member is joined as ``karmadactl join`` joins one
  (Karmada v1.16.0 ``pkg/karmadactl/join``, ``pkg/util/names``):

  - in the **member**, the Namespace ``karmada-cluster`` with two ServiceAccounts:
    ``karmada-<cluster>``, bound to ``cluster-admin`` (what Karmada's controllers act as),
    and ``karmada-impersonator`` (Karmada's unifiedAuth controller gives it its rights
    through a Work);
  - in **Karmada**, two Secrets in ``karmada-cluster`` holding a token of each account
    (the first with the member's CA), and the ``Cluster`` in ``Push`` mode pointing at
    them and at the member's API server, labelled as rule federation-member reads it;
  - a stored token is used again while it was issued for the same ServiceAccount (its
    uid) and has at least a week left (``token_reusable``); otherwise a new one of a year
    is requested. So a second join issues nothing, and a member wiped and started again
    gets new tokens.

This file uses the standard library only: ``tools/localcluster/federation_spec.py``
loads it by its path, so the local federation joins its members by the same rule as
module ``federation_member``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

KARMADA_CLUSTER = "karmada-cluster"  # the join Secrets in Karmada; the accounts in a member
IMPERSONATOR_SA = "karmada-impersonator"
CLUSTER_API = "cluster.karmada.io/v1alpha1"
# A member's token is requested for a year and requested anew when less than a week of it
# is left, or when it was issued for another ServiceAccount (a member wiped and started
# again).
TOKEN_SECONDS = 365 * 24 * 3600
TOKEN_MIN_LEFT = 7 * 24 * 3600


def member_sa(cluster: str) -> str:
    """What karmadactl join names the member's ServiceAccount (names.GenerateServiceAccountName)."""
    return f"karmada-{cluster}"


def impersonator_secret(cluster: str) -> str:
    return f"{cluster}-impersonator"


def cluster_object(
    cluster: str, endpoint: str, labels: Mapping[str, str], region: str | None = None
) -> dict[str, Any]:
    """The Push-mode Cluster: Karmada's controllers reach the member's API server with
    the join Secrets' token and CA."""
    spec: dict[str, Any] = {
        "syncMode": "Push",
        "apiEndpoint": endpoint,
        "secretRef": {"namespace": KARMADA_CLUSTER, "name": cluster},
        "impersonatorSecretRef": {
            "namespace": KARMADA_CLUSTER,
            "name": impersonator_secret(cluster),
        },
    }
    if region:
        spec["region"] = region
    return {
        "apiVersion": CLUSTER_API,
        "kind": "Cluster",
        "metadata": {"name": cluster, "labels": dict(labels)},
        "spec": spec,
    }


def member_objects(cluster: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """What the member holds for Karmada, in write order: its namespace, the
    ServiceAccount Karmada acts as (cluster-admin), the impersonator one, the binding."""
    meta = {"namespace": KARMADA_CLUSTER, "labels": dict(labels)}
    sa = member_sa(cluster)
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": KARMADA_CLUSTER,
                "labels": {"karmada.io/system": "true", **labels},
            },
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, **meta}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": IMPERSONATOR_SA, **meta},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": sa, "labels": dict(labels)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": KARMADA_CLUSTER}],
        },
    ]


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def join_secrets(
    cluster: str,
    token: str,
    impersonator_token: str,
    ca: bytes,
    labels: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The two Secrets the Cluster points at, in Karmada's ``karmada-cluster``."""
    meta = {"namespace": KARMADA_CLUSTER, "labels": dict(labels)}
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": cluster, **meta},
            "type": "Opaque",
            "data": {"token": _b64(token), "caBundle": _b64(ca)},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": impersonator_secret(cluster), **meta},
            "type": "Opaque",
            "data": {"token": _b64(impersonator_token)},
        },
    ]


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a service-account JWT (not verified: the member verifies it)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        return {}
    return claims if isinstance(claims, dict) else {}


def token_reusable(token: str, sa_uid: str, now: float, min_left: float = TOKEN_MIN_LEFT) -> bool:
    """Whether a stored token still belongs to the member's ServiceAccount and has at
    least ``min_left`` seconds left."""
    claims = token_claims(token)
    issued_for = ((claims.get("kubernetes.io") or {}).get("serviceaccount") or {}).get("uid")
    exp = claims.get("exp")
    return issued_for == sa_uid and isinstance(exp, int | float) and exp - now >= min_left


def secret_value(secret: Mapping[str, Any] | None, key: str) -> bytes | None:
    data = ((secret or {}).get("data") or {}).get(key)
    try:
        return base64.b64decode(data) if data else None
    except (ValueError, binascii.Error):
        return None
