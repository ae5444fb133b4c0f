# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule parent-queues-list: the leaf admission policy's parameter.

ConfigMap ``platform-system/platform-parent-queues``, key ``queues``, lists
(comma-separated) every queue that has child queues, so that the
``gpucloud-queue-leaf`` ValidatingAdmissionPolicy can refuse jobs in them.
The tenant modules keep it: a subscription queue is listed while it has team
queues. Each run decides only the names of its own tenant's queues and leaves
every other name as it is.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Queue


def parse_queue_list(value: object) -> list[str]:
    """The names in a ``queues`` value, as the policy reads them (split on
    commas, trimmed, empty entries dropped)."""
    if not isinstance(value, str):
        return []
    return [name.strip() for name in value.split(",") if name.strip()]


def parent_queue_names(queues: Iterable[Queue]) -> set[str]:
    """The queues among ``queues`` that another of them names as its parent."""
    listed = list(queues)
    names = {q.name for q in listed}
    return {q.parent for q in listed if q.parent in names and q.parent != q.name}


def updated_queue_list(current: object, parents: Iterable[str], owned: Iterable[str]) -> str | None:
    """Rule parent-queues-list: the new ``queues`` value, or None when
    ``current`` already lists exactly the right names (nothing to write).

    ``owned`` are the names this run decides (one tenant's queues, live and
    desired): those in ``parents`` are listed, the others removed. Names not in
    ``owned`` (other tenants' parents) stay. The result is sorted and
    comma-separated."""
    present = parse_queue_list(current)
    decided = set(owned) | set(parents)
    wanted = sorted({n for n in present if n not in decided} | set(parents))
    if set(present) == set(wanted) and len(present) == len(wanted):
        return None
    return ",".join(wanted)
