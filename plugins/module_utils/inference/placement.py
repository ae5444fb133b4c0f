# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a model service runs, judged from what ``inference_service`` read (no I/O): its
queue's type from the tenant's queue list, its class, and the GPUs its queue can ever
hold on the way to root."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..common.errors import raise_if
from ..common.names import ROOT_QUEUE, namespace_name
from ..hybrid.burst import capability_gpus
from ..jobs.classes import DEFAULT_CLASSES
from ..policy.admission import LABEL_ALLOW_CRITICAL
from ..queues.capability import effective_limit
from ..queues.kinds import leaf_queue_type
from ..queues.ownership import listed_leaves
from .rules import class_errors, critical_errors, default_class, spot_priced_errors
from .spec import ServiceSpec

# The depth of the queue tree the capability is read to; the platform's trees are 3 deep.
QUEUE_DEPTH = 8


def chain_capability(
    queue: str, queue_at: Callable[[int, str], Mapping[str, Any] | None]
) -> int | None:
    """The GPUs ``queue`` can ever hold, rule effective-capability (``queues.capability``)
    over the queue and its ancestors, ``queue_at(depth, name)`` each (one GET a level, as
    a tenant's identity may not list Queues). None: no bound."""
    chain: list[int | None] = []
    name: str | None = queue
    for depth in range(QUEUE_DEPTH):  # a loop in the tree cannot run away
        if not name or name == ROOT_QUEUE:
            break
        obj = queue_at(depth, name)
        chain.append(capability_gpus(obj))
        name = ((obj or {}).get("spec") or {}).get("parent")
    return effective_limit(chain)


def tenant_queue_type(configmap: Mapping[str, Any] | None, tenant: str, queue: str) -> str:
    """The queue's type, read from the tenant's ``platform-queues`` list (the same parameter
    the admission policies read) and judged by rule leaf-queue-of-tenant
    (``queues/ownership``)."""
    queue_type, errors = leaf_queue_type(queue, listed_leaves(configmap, tenant), tenant)
    raise_if(errors)
    return str(queue_type)


def checked_class(
    asked: tuple[str | None, Any, str],
    live_spec: ServiceSpec | None,
    namespace: Mapping[str, Any],
    tenant: str,
    queue: tuple[str, str],
) -> str:
    """The service's class: the one asked for (``asked``: class, spot price and action),
    else the live service's (a rollout step), else the queue type's default
    (``rules.default_class``, by the Namespace's label); refused (rules
    inference-class-fits-queue, inference-critical-allowed, inference-spot-priced) when it
    does not fit the queue (``queue``: name and type), is critical where the tenant may not
    run critical, or is spot without a price."""
    asked_class, asked_price, action = asked
    name, queue_type = queue
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    critical_allowed = labels.get(LABEL_ALLOW_CRITICAL) == "true"
    job_class = asked_class or (
        live_spec.job_class
        if live_spec and action != "deploy"
        else default_class(queue_type, critical_allowed)
    )
    spot_price = asked_price if action == "deploy" or live_spec is None else live_spec.spot_price
    raise_if(
        class_errors(job_class, name, queue_type, DEFAULT_CLASSES)
        + critical_errors(job_class, critical_allowed, namespace_name(tenant))
        + spot_priced_errors(job_class, spot_price)
    )
    return job_class
