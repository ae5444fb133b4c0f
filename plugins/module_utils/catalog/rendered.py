# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``state: rendered`` of ``tenant_catalog``: a catalog's manifests with no cluster,
no kubeconfig and no Kubernetes client, whole and per tenant (one file each in a
GitOps repository). The order is the rule rendered-order (``tenants.render``). Pure:
the module loads the catalog (``source_io``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.names import LABEL_TENANT
from ..tenants.network import ClusterNetworks
from ..tenants.render import render_catalog
from .spec import Catalog


def rendered_catalog(catalog: Catalog) -> dict[str, Any]:
    """The module's answer to ``state: rendered``: the manifests, with no request at all.
    The networks each plan cuts out of the egress are the ``pod_cidr`` and
    ``service_cidr`` the catalog was given (required with it, rule catalog-options)."""
    manifests = render_catalog(catalog.tenants, ClusterNetworks())
    return {
        "changed": False,
        "manifests": manifests,
        "by_tenant": by_tenant(manifests),
        "tenants": catalog.names,
    }


def by_tenant(manifests: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The rendered manifests per tenant (``platform.io/tenant``), in the same order; the
    shared parent-queues list under ``""``: one file each in a GitOps repository."""
    out: dict[str, list[dict[str, Any]]] = {}
    for manifest in manifests:
        labels = (manifest.get("metadata") or {}).get("labels") or {}
        out.setdefault(labels.get(LABEL_TENANT, ""), []).append(dict(manifest))
    return dict(sorted(out.items()))
