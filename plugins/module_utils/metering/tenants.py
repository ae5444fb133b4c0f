# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who a usage report bills, from what the cluster lists (pure: no I/O).

* Rule subscription-size (``subscription_sizes``): a tenant's subscription is the GPUs of
  ``spec.capability`` of its Queue labelled ``platform.io/queue-type=subscription`` (the
  platform keeps deserved = capability = the purchase); a tenant without one has 0.
* Rule metering-known-tenant (``unknown_tenant_errors``): a tenant named in ``tenants``
  is known: it has a Namespace labelled ``platform.io/tenant`` or a subscription Queue,
  or GPU use recorded in the period (so a tenant deleted within the period is still
  billed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError
from ..common.names import LABEL_TENANT
from ..common.quantity import GPU, parse_quantity


def _tenant_label(obj: Mapping[str, Any]) -> str:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_TENANT) or ""


def namespace_tenants(namespaces: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tenants with a Namespace (label ``platform.io/tenant``)."""
    return {t for t in (_tenant_label(ns) for ns in namespaces) if t}


def subscription_sizes(
    queues: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, Decimal], list[str]]:
    """Rule subscription-size: tenant -> subscribed GPUs, and a warning per Queue whose
    GPU capability is not a quantity (it counts as 0: nothing is included)."""
    sizes: dict[str, Decimal] = {}
    warnings: list[str] = []
    for queue in queues:
        tenant = _tenant_label(queue)
        if not tenant:
            continue
        raw = ((queue.get("spec") or {}).get("capability") or {}).get(GPU, 0)
        try:
            gpus = parse_quantity(raw)
        except (ValueError, TypeError):
            name = (queue.get("metadata") or {}).get("name", "?")
            warnings.append(f"Queue {name}: spec.capability.{GPU} {raw!r} is not a quantity; 0")
            gpus = Decimal(0)
        sizes[tenant] = sizes.get(tenant, Decimal(0)) + gpus
    return sizes, warnings


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
            f"it, it has no subscription Queue and no GPU use is recorded for it in the period (known tenants: {listed}) "
            "(rule metering-known-tenant)",
        )
    ]
