# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who a usage report bills, from what the cluster lists (pure: no I/O).

* Rule metering-known-tenant (``unknown_tenant_errors``): a tenant named in ``tenants``
  is known: it has a Namespace labelled ``platform.io/tenant``, or a subscription or GPU
  use recorded in the period (so a tenant deleted within the period is still billed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError
from ..common.names import LABEL_TENANT, owner_tenant


def _tenant_label(obj: Mapping[str, Any]) -> str:
    return owner_tenant((obj.get("metadata") or {}).get("labels"))


def namespace_tenants(namespaces: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tenants with a Namespace (label ``platform.io/tenant``)."""
    return {t for t in (_tenant_label(ns) for ns in namespaces) if t}


def unknown_tenant_errors(
    requested: Iterable[str] | None, known: Iterable[str]
) -> list[FieldError]:
    """Rule metering-known-tenant: the requested tenants that are not known, in one error
    naming them and the known ones."""
    known_set = set(known)
    unknown = sorted(set(requested or ()) - known_set)
    if not unknown:
        return []
    listed = ", ".join(sorted(known_set)) or "none"
    return [
        FieldError(
            "tenants",
            f"{', '.join(unknown)}: not a tenant: no Namespace is labelled {LABEL_TENANT} with "
            f"it, and no subscription or GPU use is recorded for it in the period (known tenants: {listed}) "
            "(rule metering-known-tenant)",
        )
    ]
