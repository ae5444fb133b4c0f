# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU sale's shortfall, one home for every way in: a pay-as-you-go growth
(``payg_capacity``, ``capacity/payg_flow``), a catalog run's sale (``catalog/sale``) and
the purchase ``tenant_create.yml`` makes (``spot_reclaim`` with ``need_from: unsold``,
whose plan is ``spot/reclaim_flow``, the same rule).

A sale is: the oversell guard (rules oversell-guard, payg-oversell, catalog-oversell-guard),
then the shortfall (rule unsold-reclaim-need: spot keeps at most the GPUs nobody has
bought after the sale), then, with ``reclaim``, the spot reclaim of that shortfall under
the ``spot-reclaim`` Lease (``spot/reclaim_io.apply_reclaim``), then the write, then (a
catalog run) the spot recompute. Without ``reclaim`` a sale with a shortfall is refused
with the numbers (``no_reclaim_error``).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError
from ..common.quantity import GPU
from ..spot.victims import SpotJob, unsold_reclaim_need
from ..workload.pool import TenantCommitment, committed_total
from .cloud import idc_available
from .payg import no_reclaim_error


@dataclass(frozen=True)
class SaleBook:
    """The pool as a sale sees it, in GPUs: the pool, what is sold (every subscription
    and PAYG grant), what spot jobs hold and what the unfinished pods hold."""

    pool: int
    sold: int
    spot: int
    allocated: int

    @property
    def unsold(self) -> int:
        return max(0, self.pool - self.sold)

    def available(self, reclaim: bool) -> int:
        """The IDC GPUs a sale may take (rule payg-idc-first's share: the unsold ones;
        without ``reclaim`` only as many as need no spot job reclaimed)."""
        return idc_available(self.pool, self.sold, self.spot, self.allocated, reclaim)


def sale_book(
    pool_gpus: int,
    allocated_gpus: int,
    commitments: Iterable[TenantCommitment],
    candidates: Iterable[SpotJob],
) -> SaleBook:
    """The book from the pool, the commitments (rule committed) and the spot candidates
    (rules spot-candidate and spot-candidate-pod)."""
    sold = int(committed_total(commitments)[GPU])
    return SaleBook(pool_gpus, sold, sum(c.gpus for c in candidates), allocated_gpus)


def book_of(reclaimed: Mapping[str, Any]) -> SaleBook:
    """The book a sale's reclaim counted with (its result: pool, sold, spot, allocated)."""
    return SaleBook(
        int(reclaimed.get("pool") or 0),
        int(reclaimed.get("sold") or 0),
        int(reclaimed.get("spot") or 0),
        int(reclaimed.get("allocated") or 0),
    )


@dataclass(frozen=True)
class SalePlan:
    """A sale of ``growth`` IDC GPUs: the spot GPUs to reclaim first (``shortfall``), and
    ``refusal`` when that needs a reclaim ``reclaim: false`` forbids."""

    book: SaleBook
    growth: int
    shortfall: int
    refusal: FieldError | None = None

    @property
    def reclaims(self) -> bool:
        """Whether the sale's reclaim runs (a shortfall, and reclaiming allowed)."""
        return self.shortfall > 0 and self.refusal is None


def plan_sale(
    book: SaleBook,
    growth: int,
    reclaim: bool,
    field: str = f"capability.{GPU}",
    sale: str = "growing by",
) -> SalePlan:
    """The shortfall of selling ``growth`` GPUs (rule unsold-reclaim-need) and, without
    ``reclaim``, the refusal naming it (``field`` and ``sale`` say what sells)."""
    shortfall = unsold_reclaim_need(book.pool, book.sold, book.spot, book.allocated, growth)
    return SalePlan(
        book, growth, shortfall, sale_refusal(book, growth, shortfall, reclaim, field, sale)
    )


def sale_refusal(
    book: SaleBook,
    growth: int,
    shortfall: int,
    reclaim: bool,
    field: str = f"capability.{GPU}",
    sale: str = "growing by",
) -> FieldError | None:
    """A sale of ``growth`` GPUs whose ``shortfall`` needs spot jobs reclaimed while
    ``reclaim`` is off: refused with the unsold GPUs and what spot holds; None otherwise."""
    if not shortfall or reclaim:
        return None
    return no_reclaim_error(growth, shortfall, book.unsold, book.spot, field, sale)
