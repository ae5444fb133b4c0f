# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order in which queue changes are written.

Volcano's webhook checks every write against the tree as it is at that
moment, so a valid end state can still be refused half-way: shrinking a
subscription before its teams, or growing a team before its subscription.
Rule queue-write-order: removals first (leaves before parents), then every
queue that shrinks is written at the per-resource minimum of its old and new
values (deepest first), then every queue at its new values (parents first).
Each intermediate tree is valid whenever the old and the new trees are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.names import QUEUE_API, ROOT_QUEUE
from . import capability as capability_rule
from .model import Queue, needs_adoption, read_live, same_capacity, same_spec

CREATE, UPDATE, DELETE = "create", "update", "delete"
# A partial apply of a queue's capacity fields under the capacity field manager.
CAPACITY = "capacity"


@dataclass
class QueueStep:
    action: str
    name: str
    queue: Queue | None = None
    final: bool = True
    # A capacity step that creates the queue: it writes the queue whole (rule
    # queue-created-whole), labels included, not its capacity fields alone.
    whole: bool = False

    def manifest(self) -> dict[str, Any]:
        """What the step writes: the whole queue, only its capacity, or (for a delete)
        just its name."""
        if self.action == DELETE or self.queue is None:
            return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": self.name}}
        if self.action == CAPACITY:
            return self.queue.whole_manifest() if self.whole else self.queue.capacity_manifest()
        return self.queue.to_manifest()


def _min_present(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> quantity.Resources:
    """deserved/guarantee: a missing entry is 0, so only shared keys remain."""
    return {k: min(a[k], b[k]) for k in a if k in b}


def _min_limit(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> quantity.Resources:
    """capability: a missing entry is unlimited, so every key remains."""
    out = dict(a)
    for k, v in b.items():
        out[k] = min(out[k], v) if k in out else v
    return out


def lower_bound(
    old: Queue,
    new: Queue,
    new_bound: Mapping[str, Decimal] | None = None,
    old_bound: Mapping[str, Decimal] | None = None,
) -> Queue:
    """The queue at the per-resource minimum of its old and new values. A capability left
    unset counts at what its parent lets it have (``new_bound`` in the new tree,
    ``old_bound`` in the live one; rule effective-capability): unset is not unlimited, so
    a child is never written above a parent that has not grown yet, nor kept above one
    that shrinks."""
    new_cap = {
        **{k: v for k, v in (new_bound or {}).items() if k in old.capability},
        **new.capability,
    }
    old_cap = {
        **{k: v for k, v in (old_bound or {}).items() if k in new.capability},
        **old.capability,
    }
    return replace(
        new,
        deserved=_min_present(old.deserved, new.deserved),
        guarantee=_min_present(old.guarantee, new.guarantee),
        capability=_min_limit(old_cap, new_cap),
    )


def effective_capability(queue: Queue, by_name: Mapping[str, Queue]) -> quantity.Resources:
    """Rule effective-capability (``queues.capability``) over ``queue`` and its ancestors
    in ``by_name``; a resource no one limits is absent."""
    return capability_rule.effective_capability(q.capability for q in ancestry(queue, by_name))


def ancestry(queue: Queue, by_name: Mapping[str, Queue]) -> list[Queue]:
    """``queue``, then each ancestor found in ``by_name``, up to the root queue (a cycle
    ends the chain)."""
    chain: list[Queue] = []
    seen: set[str] = set()
    current: Queue | None = queue
    while current is not None and current.name not in seen:
        seen.add(current.name)
        chain.append(current)
        current = by_name.get(current.parent) if current.parent != ROOT_QUEUE else None
    return chain


def _bound(parent: str, tree: Mapping[str, Queue]) -> quantity.Resources | None:
    """What ``parent`` lets a child have in ``tree`` (None under root)."""
    queue = tree.get(parent)
    return effective_capability(queue, tree) if queue is not None else None


def _depth(queue: Queue, by_name: Mapping[str, Queue]) -> int:
    depth, parent, seen = 0, queue.parent, set()
    while parent and parent != ROOT_QUEUE and parent not in seen:
        seen.add(parent)
        depth += 1
        parent = by_name[parent].parent if parent in by_name else ""
    return depth


def queue_steps(
    desired: Sequence[Queue],
    live: Mapping[str, Mapping[str, Any]],
    deletes: Sequence[str] = (),
) -> list[QueueStep]:
    """The writes that take ``live`` to ``desired`` in an order Volcano accepts.
    Unchanged queues produce no step."""
    by_name = {q.name: q for q in desired}
    steps = [QueueStep(DELETE, name) for name in deletes if name in live]
    current: dict[str, Queue] = {}
    for name, manifest in live.items():
        queue = read_live(manifest)
        if queue is not None:
            current[name] = queue
    order = sorted(desired, key=lambda q: _depth(q, by_name))
    shrink: list[QueueStep] = []
    final: list[QueueStep] = []
    for q in order:
        if q.name not in live:
            if q.capacity_fields and q.write_capacity:
                # Capacity first: the queue never exists without its limit, and this
                # first write carries it whole. The platform's own apply follows.
                final.append(QueueStep(CAPACITY, q.name, q, whole=True))
            final.append(QueueStep(CREATE, q.name, q))
            continue
        if q.capacity_fields and q.write_capacity and not same_capacity(q, live[q.name]):
            final.append(QueueStep(CAPACITY, q.name, q))
        if same_spec(q, live[q.name]):
            if needs_adoption(live[q.name]):
                final.append(QueueStep(UPDATE, q.name, q))
            continue
        old = current.get(q.name)
        if old is not None and old.parent == q.parent:
            low = lower_bound(old, q, _bound(q.parent, by_name), _bound(old.parent, current))
            if not same_spec(low, old.to_manifest()) and not same_spec(low, q.to_manifest()):
                shrink.append(QueueStep(UPDATE, q.name, low, final=False))
            elif same_spec(low, q.to_manifest()):
                # The queue only shrinks: write it with the other shrinking ones.
                shrink.append(QueueStep(UPDATE, q.name, q))
                continue
        final.append(QueueStep(UPDATE, q.name, q))
    return steps + list(reversed(shrink)) + final
