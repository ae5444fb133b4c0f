# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule effective-capability, the one home of "how much can this queue ever hold".

Volcano's capacity plugin bounds a queue by its own capability and by every ancestor's
on the way to ``root``: a child never holds more than its parent may. So, per resource,
a queue's effective capability is the smallest capability along its chain (the queue
first, then its parent, up to the root queue, which is unlimited); a resource that no
queue on the chain limits is unlimited (absent, or None for one resource).

Every reader of the queue tree asks this rule with the chain it already holds: the
queue-write order (``queues.plan``), the arbiter (``arbiter.model``), the feasibility of
a job (``jobs.feasibility``) and the inference service's replica bound
(``inference``). Webhook-valid trees have every child within its parent, where the
smallest value and the nearest one agree; a tree written around the webhook does not,
and the smallest one is what Volcano enforces.

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TypeVar

Amount = TypeVar("Amount", int, Decimal)


def effective_limit(chain: Iterable[Amount | None]) -> Amount | None:
    """Rule effective-capability for one resource: the smallest limit of the chain (the
    queue's, then its ancestors'); None when nothing on the chain limits it."""
    present = [value for value in chain if value is not None]
    return min(present) if present else None


def effective_capability(chain: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    """Rule effective-capability per resource, over the chain's capabilities (the
    queue's, then its ancestors'); a resource no one limits is absent."""
    capabilities = list(chain)
    resources = {key for capability in capabilities for key in capability}
    out: dict[str, Decimal] = {}
    for key in sorted(resources):
        value = effective_limit(capability.get(key) for capability in capabilities)
        if value is not None:
            out[key] = value
    return out
