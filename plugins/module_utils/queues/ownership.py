# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule queue-ownership: which tenant a queue belongs to, and which queues a tenant may
put work in. One home for every module that asks (pure: no I/O).

* A queue belongs to the tenant its ``platform.io/tenant`` label names, and the platform
  manages it when its ``platform.io/managed-by`` label says so. Both are platform state (a
  tenant's identity cannot write a Queue), read for every platform object by
  ``common/names.owner_tenant`` and ``common/names.is_managed``.
* A tenant's leaf queues are its queues that no other queue names as its parent, each
  with its type (``leaf_types``): Volcano runs work only in leaf queues. The ``tenant``
  module writes them into the tenant's ``platform-queues`` ConfigMap, which the
  admission policies and a tenant's own identity read (``listed_leaves``); modules that
  list the managed Queues anyway derive the same map from them
  (``queues/kinds.tenant_leaves``).
* Rule leaf-queue-of-tenant over that map (``queues/kinds.leaf_queue_type``): a queue
  given for a tenant's work is one of its leaf queues, or is refused named as what it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import TENANT_QUEUES_CONFIGMAP, namespace_name


def leaf_types(rows: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Rule queue-ownership: (name, parent, queue type) of one tenant's queues -> the queues
    it may put work in, each with its type: every queue no other queue of the rows names as
    its parent. Written as the tenant's ``platform-queues`` list, read by every module that
    takes a tenant's queue and by the admission policies."""
    listed = list(rows)
    parents = {parent for _name, parent, _type in listed}
    return {name: queue_type for name, _parent, queue_type in listed if name not in parents}


def listed_leaves(configmap: Mapping[str, Any] | None, tenant: str) -> dict[str, str]:
    """The tenant's leaf queues as its ``platform-queues`` ConfigMap lists them (name ->
    queue type); refused when the tenant has none (the ``tenant`` module writes it)."""
    if configmap is None:
        raise_if(
            [
                FieldError(
                    "tenant",
                    f"{tenant!r} has no queue list (ConfigMap {TENANT_QUEUES_CONFIGMAP} in "
                    f"{namespace_name(tenant)}); create or update the tenant first",
                )
            ]
        )
    return dict((configmap or {}).get("data") or {})
