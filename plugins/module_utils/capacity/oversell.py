# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The oversell guard: nothing is sold beyond the pool.

Rule held here:

* Rule oversell-guard (``oversell_errors``, ``check_oversell``; for a
  tenant's purchase ``tenant_oversell_errors``): subscriptions + PAYG never
  exceed the pool. Only what grows is checked, so a cluster that is already
  oversold (nodes left the pool) still takes purchases that stay or shrink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from ..common.errors import FieldError, PlatformValidationError
from ..common.quantity import Resources, fmt
from ..workload.pool import POOL_RESOURCES, TenantCommitment
from .purchase import Purchase, catalog_purchase, purchase_growth


def _zero() -> Resources:
    return {name: Decimal(0) for name in POOL_RESOURCES}


def oversell_errors(
    field_name: str,
    pool: Mapping[str, Decimal],
    committed_elsewhere: Mapping[str, Decimal],
    requested: Mapping[str, Decimal],
    what: str = "the grant",
    parts: Sequence[tuple[str, Mapping[str, Decimal]]] | None = None,
) -> list[FieldError]:
    """Rule oversell-guard: ``committed_elsewhere`` (every other subscription
    and PAYG grant) plus ``requested`` must fit in the pool, per resource.

    Returns one error per resource that does not fit, with the numbers, for example
    ``capability.nvidia.com/gpu: 30 ... (64 in the pool - 40 sold as subscriptions
    and pay-as-you-go = 24)``. ``parts`` (label, amounts), when given, shows
    ``committed_elsewhere`` term by term instead of as one number; the parts
    add up to it.
    """
    errors = []
    for r in POOL_RESOURCES:
        if r not in requested:
            continue
        want = Decimal(requested[r])
        have = Decimal(pool.get(r, 0))
        used = Decimal(committed_elsewhere.get(r, 0))
        left = have - used
        if want > left:
            if parts is None:
                terms = f"{fmt(used, r)} sold as subscriptions and pay-as-you-go"
            else:
                terms = " - ".join(
                    f"{fmt(Decimal(amounts.get(r, 0)), r)} {label}" for label, amounts in parts
                )
            errors.append(
                FieldError(
                    f"{field_name}.{r}",
                    f"{fmt(want, r)} for {what} exceeds what the pool has left for it "
                    f"({fmt(have, r)} in the pool - {terms} = {_signed(left, r)}); "
                    f"at most {fmt(max(left, Decimal(0)), r)} can be granted (rule oversell-guard)",
                )
            )
    return errors


def check_oversell(
    field_name: str,
    pool: Mapping[str, Decimal],
    committed_elsewhere: Mapping[str, Decimal],
    requested: Mapping[str, Decimal],
    what: str = "the grant",
) -> None:
    """Rule oversell-guard (``oversell_errors``), raising PlatformValidationError."""
    errors = oversell_errors(field_name, pool, committed_elsewhere, requested, what)
    if errors:
        raise PlatformValidationError(errors)


def tenant_oversell_errors(
    tenant: str,
    pool: Mapping[str, Decimal],
    commitments: Mapping[str, TenantCommitment],
    subscription: Mapping[str, Decimal],
    payg: Mapping[str, Decimal] | None = None,
) -> list[FieldError]:
    """Rule oversell-guard for one tenant's purchase (``subscription`` and,
    when given, ``payg``): every other tenant's subscription and PAYG grant
    (``commitments``, from ``commitments_from_queues`` over every managed
    queue) plus this tenant's new values must fit in the pool.

    Only what grows is checked (``purchase_growth``). The subscription is
    checked first, with this tenant's PAYG grant as it stays (the live one,
    or the new one when this run shrinks it), reported as
    ``subscription.<resource>``; then a growing PAYG grant on top of the new
    subscription, reported as ``payg.<resource>``. When both pass, the
    tenant's new values fit with everything else sold."""
    current = commitments.get(tenant)
    grown_sub, grown_payg = purchase_growth(current, subscription, payg)
    if not grown_sub and not grown_payg:
        return []
    others_sub, others_payg = _zero(), _zero()
    for c in commitments.values():
        if c.tenant == tenant:
            continue
        for r in POOL_RESOURCES:
            others_sub[r] += c.subscription[r]
            others_payg[r] += c.payg[r]
    new_sub = {r: Decimal(subscription.get(r, 0)) for r in POOL_RESOURCES}
    # The PAYG grant the subscription shares the pool with: the live one, or
    # what is kept of it when this run shrinks it.
    own_payg = dict(current.payg) if current is not None else _zero()
    if payg is not None:
        own_payg = {r: min(own_payg[r], Decimal(payg.get(r, 0))) for r in POOL_RESOURCES}
    others = [
        ("in other tenants' subscriptions", others_sub),
        ("in other tenants' pay-as-you-go", others_payg),
    ]
    errors: list[FieldError] = []
    checks = (
        ("subscription", "subscription", grown_sub, ("in this tenant's pay-as-you-go", own_payg)),
        ("payg", "pay-as-you-go grant", grown_payg, ("in this tenant's new subscription", new_sub)),
    )
    for field_name, what, grown, own in checks:
        if not grown:
            continue
        parts = [*others, own]
        elsewhere = {r: sum((Decimal(p[1][r]) for p in parts), Decimal(0)) for r in POOL_RESOURCES}
        errors += oversell_errors(
            field_name,
            pool,
            elsewhere,
            grown,
            what=f"the {what} of tenant {tenant!r}",
            parts=parts,
        )
    return errors


def _signed(value: Decimal, resource: str) -> str:
    return f"-{fmt(-value, resource)}" if value < 0 else str(fmt(value, resource))


def catalog_oversell_errors(
    pool: Mapping[str, Decimal],
    live: Mapping[str, TenantCommitment],
    desired: Mapping[str, Purchase],
    pruned: Sequence[str] = (),
) -> list[FieldError]:
    """Rule catalog-oversell-guard: every purchase of a tenant catalog together.

    ``desired`` maps each catalog tenant to its (subscription, payg) (payg None: the
    live grant stays). Tenants outside the catalog keep what they hold unless they are
    ``pruned``. The catalog's total of subscriptions and pay-as-you-go grants must fit
    in the pool per resource; as for one purchase, only a total that grows is checked,
    so a pool that shrank under what is sold still takes a catalog that sells no more.
    The error names the numbers and the tenants that grow."""
    totals = catalog_purchase(live, desired, pruned)  # rule catalog-purchase
    errors = []
    for r in POOL_RESOURCES:
        total = totals.after[r]
        have = Decimal(pool.get(r, 0))
        if total <= have or total <= totals.before[r]:
            continue
        growing = totals.growing[r]
        shown = ", ".join(growing[:10]) + (" ..." if len(growing) > 10 else "")
        errors.append(
            FieldError(
                f"tenants.{r}",
                f"the catalog sells {fmt(total, r)} as subscriptions and pay-as-you-go "
                f"({fmt(totals.catalog[r], r)} to the catalog's tenants + {fmt(totals.outside[r], r)} kept "
                f"by tenants outside it) but the pool has {fmt(have, r)}; "
                f"{fmt(total - have, r)} too many; growing: {shown} "
                "(rule catalog-oversell-guard)",
            )
        )
    return errors
