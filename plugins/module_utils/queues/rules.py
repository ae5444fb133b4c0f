# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue-tree rules: Volcano's own, and the platform's on top of them.

Each rule is one function named ``rule_<what>``; ``tree_errors`` runs them
all over a set of queues, ``queue_tree_errors`` does the same for manifests
(that is the ``gpucloud.platform.queue_tree_errors`` filter). Volcano's
webhook (1.15) enforces the first group too, but one at a time, against its
informer cache, and with a first-error-wins message; checking here first
gives every error at once, before anything is written.

Volcano's rules: guarantee <= deserved <= capability per resource; a child's
capability <= its parent's; the children's deserved (and guarantee) sum to no
more than the parent's, and a resource the children name must be named by
the parent (Volcano reads a missing one as 0); jobs only in leaf queues;
depth at most 5 below ``root``; every queue names its parent.

Platform rules: a subscription queue's deserved equals its capability (the
purchase), so does a pay-as-you-go queue's; a spot queue deserves nothing;
tenant-level queues hang under ``root`` and team queues under their tenant's
subscription queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, PlatformValidationError
from ..common.names import (
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    ROOT_QUEUE,
    queue_name,
)
from .model import Queue, allocated

# Volcano's webhook-manager default for --max-queue-depth.
MAX_DEPTH = 5


def _q(value: Decimal, resource: str) -> str:
    return str(quantity.fmt(value, resource))


# --------------------------------------------------------------------------
# Volcano's rules
# --------------------------------------------------------------------------


def rule_guarantee_deserved_capability(queue: Queue) -> list[FieldError]:
    """Rule guarantee-deserved-capability: per resource guarantee <= deserved <= capability.

    A guarantee needs a deserved entry for the same resource; a resource
    without capability is unlimited."""
    errors = []
    for res, g in sorted(queue.guarantee.items()):
        d = queue.deserved.get(res)
        if d is None:
            errors.append(
                FieldError(
                    queue.path(f"guarantee.{res}"),
                    f"{_q(g, res)} has no deserved {res} to stay within; set deserved.{res} to at least {_q(g, res)}",
                )
            )
        elif g > d:
            errors.append(
                FieldError(
                    queue.path(f"guarantee.{res}"),
                    f"{_q(g, res)} exceeds deserved ({_q(d, res)}); guarantee must be at most deserved",
                )
            )
    for res, d in sorted(queue.deserved.items()):
        c = queue.capability.get(res)
        if c is not None and d > c:
            errors.append(
                FieldError(
                    queue.path(f"deserved.{res}"),
                    f"{_q(d, res)} exceeds capability ({_q(c, res)}); deserved must be at most capability",
                )
            )
    return errors


def rule_explicit_parent(queue: Queue) -> list[FieldError]:
    """Rule explicit-parent: every queue but ``root`` names its parent, and not itself."""
    if queue.name == ROOT_QUEUE:
        return []
    if not queue.parent:
        return [
            FieldError(
                queue.path("parent"),
                "is not set; name the parent explicitly ('root' for a top-level queue), otherwise "
                "Volcano's queue controller fills it in and every run shows a difference",
            )
        ]
    if queue.parent == queue.name:
        return [
            FieldError(
                queue.path("parent"),
                f"{queue.parent!r} is the queue itself; a queue cannot be its own parent",
            )
        ]
    return []


def rule_child_capability_within_parent(child: Queue, parent: Queue) -> list[FieldError]:
    """Rule child-capability: a child's capability is at most its parent's, per resource."""
    errors = []
    for res, c in sorted(child.capability.items()):
        pc = parent.capability.get(res)
        if pc is not None and c > pc:
            errors.append(
                FieldError(
                    child.path(f"capability.{res}"),
                    f"{_q(c, res)} exceeds the capability of parent queue {parent.name} ({_q(pc, res)}); "
                    f"give at most {_q(pc, res)}",
                )
            )
    return errors


def _children_sum_errors(parent: Queue, children: Sequence[Queue], attr: str) -> list[FieldError]:
    limit: quantity.Resources = getattr(parent, attr)
    errors = []
    names = sorted({res for child in children for res in getattr(child, attr)})
    for res in names:
        if res not in limit:
            child = next(c for c in children if res in getattr(c, attr))
            errors.append(
                FieldError(
                    child.path(f"{attr}.{res}"),
                    f"parent queue {parent.name} has no {attr} {res}; a child may only name resources "
                    f"its parent's {attr} names (Volcano counts a missing one as 0)",
                )
            )
            continue
        used: list[Decimal] = []
        for child in children:
            value = getattr(child, attr).get(res)
            if value is None:
                continue
            left = limit[res] - sum(used, Decimal(0))
            if value > left:
                steps = " - ".join([_q(limit[res], res)] + [_q(u, res) for u in used])
                total = sum((getattr(c, attr).get(res, Decimal(0)) for c in children), Decimal(0))
                errors.append(
                    FieldError(
                        child.path(f"{attr}.{res}"),
                        f"{_q(value, res)} exceeds what is left of the {attr} of parent queue {parent.name} "
                        f"({steps} = {_q(left, res)}); the children's {attr} {res} add up to {_q(total, res)}",
                    )
                )
                break
            used.append(value)
    return errors


def rule_children_deserved_within_parent(
    parent: Queue, children: Sequence[Queue]
) -> list[FieldError]:
    """Rule children-deserved: the children's deserved sum to at most the parent's, per resource."""
    return _children_sum_errors(parent, children, "deserved")


def rule_children_guarantee_within_parent(
    parent: Queue, children: Sequence[Queue]
) -> list[FieldError]:
    """Rule children-guarantee: the children's guarantee sum to at most the parent's, per resource."""
    return _children_sum_errors(parent, children, "guarantee")


def rule_jobs_only_in_leaves(
    parent: Queue, children: Sequence[Queue], busy: Mapping[str, int]
) -> list[FieldError]:
    """Rule jobs-only-in-leaves: a queue that runs jobs cannot take child queues.

    ``busy`` maps a queue name to its running jobs or pod groups right now."""
    running = busy.get(parent.name, 0)
    if not children or not running:
        return []
    return [
        FieldError(
            children[0].path("parent"),
            f"parent queue {parent.name} has {running} running job(s) or pod group(s); Volcano runs jobs only "
            "in leaf queues, so it cannot take sub-queues until they finish or move",
        )
    ]


def rule_queue_depth(queue: Queue, by_name: Mapping[str, Queue]) -> list[FieldError]:
    """Rule queue-depth: at most 5 levels below ``root``; the parent chain must
    exist and must not loop."""
    if queue.name == ROOT_QUEUE or not queue.parent:
        return []
    depth, seen, parent = 1, {queue.name}, queue.parent
    while parent != ROOT_QUEUE:
        if parent in seen:
            return [
                FieldError(
                    queue.path("parent"),
                    f"{queue.parent!r} leads back to {parent!r}: the parent chain loops",
                )
            ]
        seen.add(parent)
        found = by_name.get(parent)
        if found is None:
            return [
                FieldError(
                    queue.path("parent"),
                    f"parent queue {parent!r} is neither 'root' nor one of the queues given",
                )
            ]
        depth += 1
        parent = found.parent
        if not parent:
            break
    if depth > MAX_DEPTH:
        return [
            FieldError(
                queue.path("parent"),
                f"puts {queue.name} {depth} levels below root; Volcano allows at most {MAX_DEPTH}",
            )
        ]
    return []


# --------------------------------------------------------------------------
# Platform rules
# --------------------------------------------------------------------------


def _deserved_equals_capability(queue: Queue, what: str) -> list[FieldError]:
    errors = []
    for res in sorted(set(queue.deserved) | set(queue.capability)):
        d, c = queue.deserved.get(res), queue.capability.get(res)
        if d != c:
            shown_d = "unset" if d is None else _q(d, res)
            shown_c = "unset" if c is None else _q(c, res)
            errors.append(
                FieldError(
                    queue.path(f"deserved.{res}"),
                    f"{shown_d} differs from capability ({shown_c}); a {what} queue's deserved equals its capability",
                )
            )
    return errors


def rule_subscription_deserved_equals_capability(queue: Queue) -> list[FieldError]:
    """Rule subscription-deserved-equals-capability: the purchase is reserved, not elastic."""
    if queue.queue_type != QUEUE_TYPE_SUBSCRIPTION:
        return []
    return _deserved_equals_capability(queue, "subscription")


def rule_payg_deserved_equals_capability(queue: Queue) -> list[FieldError]:
    """Rule payg-deserved-equals-capability: what a pay-as-you-go queue has is protected."""
    if queue.queue_type != QUEUE_TYPE_PAYG:
        return []
    return _deserved_equals_capability(queue, "pay-as-you-go")


def rule_spot_deserves_nothing(queue: Queue) -> list[FieldError]:
    """Rule spot-deserved-zero: everything a spot queue uses can be taken back."""
    if queue.queue_type != QUEUE_TYPE_SPOT:
        return []
    errors = [
        FieldError(
            queue.path(f"deserved.{res}"),
            f"{_q(v, res)} must be 0; a spot queue deserves nothing",
        )
        for res, v in sorted(queue.deserved.items())
        if v != 0
    ]
    errors += [
        FieldError(
            queue.path(f"guarantee.{res}"),
            f"{_q(v, res)} must be 0; a spot queue is guaranteed nothing",
        )
        for res, v in sorted(queue.guarantee.items())
        if v != 0
    ]
    return errors


def rule_platform_parent(queue: Queue) -> list[FieldError]:
    """Rule platform-parent: subscription, payg and spot queues sit under ``root``;
    a team queue sits under its tenant's subscription queue."""
    if not queue.tenant or queue.queue_type not in (
        QUEUE_TYPE_SUBSCRIPTION,
        QUEUE_TYPE_PAYG,
        QUEUE_TYPE_SPOT,
        QUEUE_TYPE_TEAM,
    ):
        return []
    if queue.queue_type == QUEUE_TYPE_TEAM:
        expected = queue_name(queue.tenant, QUEUE_TYPE_SUBSCRIPTION)
    else:
        expected = ROOT_QUEUE
    if queue.parent != expected:
        return [
            FieldError(
                queue.path("parent"),
                f"{queue.parent!r} is not allowed for a {queue.queue_type} queue; its parent is {expected!r}",
            )
        ]
    return []


def rule_unique_names(queues: Sequence[Queue]) -> list[FieldError]:
    """Rule unique-names: a queue name appears once."""
    seen: set[str] = set()
    errors = []
    for q in queues:
        if q.name in seen:
            errors.append(
                FieldError(q.prefix or "name", f"queue name {q.name!r} is given more than once")
            )
        seen.add(q.name)
    return errors


# --------------------------------------------------------------------------
# Changes against live state
# --------------------------------------------------------------------------


def rule_capability_above_allocated(
    queue: Queue, in_use: Mapping[str, Decimal]
) -> list[FieldError]:
    """Rule capability-above-allocated: a new capability may not go below what
    the queue has allocated right now (``status.allocated``), unless forced."""
    errors = []
    for res, c in sorted(queue.capability.items()):
        a = in_use.get(res, Decimal(0))
        if c < a:
            errors.append(
                FieldError(
                    queue.path(f"capability.{res}"),
                    f"{_q(c, res)} is below the {_q(a, res)} queue {queue.name} has allocated right now; "
                    f"give at least {_q(a, res)}, or force: true to shrink it anyway (running pods keep "
                    "what they hold, new ones wait)",
                )
            )
    return errors


# --------------------------------------------------------------------------
# All rules together
# --------------------------------------------------------------------------


def tree_errors(queues: Sequence[Queue], busy: Mapping[str, int] | None = None) -> list[FieldError]:
    """Every rule over a set of queues (one tenant's, or a whole tree)."""
    busy = busy or {}
    by_name = {q.name: q for q in queues}
    errors = rule_unique_names(queues)
    for q in queues:
        errors += rule_explicit_parent(q)
        errors += rule_guarantee_deserved_capability(q)
        errors += rule_subscription_deserved_equals_capability(q)
        errors += rule_payg_deserved_equals_capability(q)
        errors += rule_spot_deserves_nothing(q)
        errors += rule_platform_parent(q)
        errors += rule_queue_depth(q, by_name)
    for parent in queues:
        children = [q for q in queues if q.parent == parent.name and q is not parent]
        if not children:
            continue
        for child in children:
            errors += rule_child_capability_within_parent(child, parent)
        errors += rule_children_deserved_within_parent(parent, children)
        errors += rule_children_guarantee_within_parent(parent, children)
        errors += rule_jobs_only_in_leaves(parent, children, busy)
    return errors


def _busy_from_status(manifest: Mapping[str, Any]) -> int:
    pods = allocated(manifest).get("pods", Decimal(0))
    status = manifest.get("status") or {}
    groups = sum(int(status.get(k) or 0) for k in ("running", "inqueue"))
    return max(int(pods), groups)


def queue_tree_errors(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every rule over a list of Queue manifests; human-readable errors, empty
    when the tree is valid. A manifest's ``status`` (when it is a live object)
    tells which queues run jobs."""
    queues: list[Queue] = []
    messages: list[str] = []
    busy: dict[str, int] = {}
    for index, manifest in enumerate(manifests or []):
        if not isinstance(manifest, Mapping):
            messages.append(f"[{index}]: {manifest!r} is not a Queue manifest (a mapping)")
            continue
        kind = manifest.get("kind")
        if kind not in (None, "Queue"):
            messages.append(f"[{index}].kind: {kind!r} is not a Queue")
            continue
        try:
            queue = Queue.from_manifest(manifest)
        except PlatformValidationError as exc:
            messages += exc.messages
            continue
        queues.append(queue)
        busy[queue.name] = _busy_from_status(manifest)
    return messages + [str(e) for e in tree_errors(queues, busy)]
