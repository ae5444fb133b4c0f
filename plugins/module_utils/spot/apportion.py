# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule spot-apportionment: how the idle pool is shared out as spot capability.

    c(tenant i) = idle x subscription_i / total_subscription

GPUs are apportioned in whole GPUs by the largest-remainder method, so the
capabilities add up to exactly the idle GPUs and nobody is off its exact
share by a whole GPU or more. CPU and memory use the same shares, in whole
millicores and whole MiB. A tenant without a subscription gets 0; when no
tenant has a subscription nobody gets spot capability.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from math import lcm

from ..common.errors import FieldError, PlatformValidationError
from ..common.quantity import CPU, GPU, MEMORY, Resources

# The unit each pool resource is apportioned in (whole units of it).
UNITS = {GPU: Fraction(1), CPU: Fraction(1, 1000), MEMORY: Fraction(1 << 20)}


def _check_subscriptions(subscriptions: Mapping[str, object], field: str) -> dict[str, Fraction]:
    errors = []
    out: dict[str, Fraction] = {}
    for tenant, value in subscriptions.items():
        if isinstance(value, bool) or not isinstance(value, int | Decimal | Fraction | float):
            errors.append(
                FieldError(
                    f"{field}.{tenant}",
                    f"{value!r} is not a number of GPUs (a whole number, 0 or more)",
                )
            )
            continue
        number = Fraction(Decimal(value)) if isinstance(value, float) else Fraction(value)
        if number < 0:
            errors.append(
                FieldError(
                    f"{field}.{tenant}", f"{value!r} is negative; a subscription is 0 or more GPUs"
                )
            )
            continue
        out[tenant] = number
    if errors:
        raise PlatformValidationError(errors)
    return out


def largest_remainder(total: int, weights: Mapping[str, Fraction]) -> dict[str, int]:
    """Rule spot-apportionment, one resource: share ``total`` whole units out
    in proportion to ``weights``.

    Each tenant first gets the whole part of its exact share; the units left
    over go one each to the largest remainders. Ties go to the larger weight,
    then to the tenant name in alphabetical order. A weight of 0 gets 0; with
    no positive weight everyone gets 0.
    """
    if total < 0:
        raise PlatformValidationError(
            [FieldError("total", f"{total} is negative; the amount to share out is 0 or more")]
        )
    integral = _integral(weights)
    weight_sum = sum(integral.values())
    if weight_sum <= 0 or total == 0:
        return {tenant: 0 for tenant in weights}
    # Exact share = total x weight / weight_sum. With whole weights its whole part and
    # remainder are an integer division: remainders over the same denominator compare
    # as their numerators, so no Fraction is built per tenant (10,000 tenants, 3 resources).
    shares: dict[str, int] = {}
    remainders: list[tuple[int, int, str]] = []
    for tenant, weight in integral.items():
        whole, remainder = divmod(total * weight, weight_sum)
        shares[tenant] = whole
        if weight > 0:
            remainders.append((remainder, weight, tenant))
    left = total - sum(shares.values())
    # Largest remainder first, then larger subscription, then the name.
    remainders.sort(key=lambda item: (-item[0], -item[1], item[2]))
    for _unused, _unused, tenant in remainders[:left]:
        shares[tenant] += 1
    return shares


def _integral(weights: Mapping[str, Fraction]) -> dict[str, int]:
    """The weights scaled to whole numbers by their common denominator (1 for whole GPU
    subscriptions): the same proportions, so the same apportionment."""
    denominator = 1
    for weight in weights.values():
        denominator = lcm(denominator, weight.denominator)
    return {
        tenant: weight.numerator * (denominator // weight.denominator)
        for tenant, weight in weights.items()
    }


def apportion_units(
    amount: Decimal, unit: Fraction, weights: Mapping[str, Fraction], field: str
) -> dict[str, Decimal]:
    """One resource's ``amount`` shared out in whole ``unit``s in proportion to
    ``weights`` (rule spot-apportionment's largest remainder); a fraction of a unit stays
    unassigned."""
    exact = Fraction(Decimal(amount))
    if exact < 0:
        raise PlatformValidationError(
            [FieldError(field, f"{amount} is negative; idle is 0 or more")]
        )
    numerator, denominator = Decimal(unit.numerator), Decimal(unit.denominator)
    return {
        tenant: count * numerator / denominator
        for tenant, count in largest_remainder(int(exact / unit), weights).items()
    }


def apportion_spot(
    idle: Mapping[str, Decimal], subscriptions: Mapping[str, object]
) -> dict[str, Resources]:
    """Rule spot-apportionment: every tenant's spot capability (GPUs, cpu and
    memory) from the idle pool and the tenants' subscribed GPUs."""
    weights = _check_subscriptions(subscriptions, "subscriptions")
    result: dict[str, Resources] = {tenant: {} for tenant in weights}
    for resource, unit in UNITS.items():
        shares = apportion_units(idle.get(resource, 0), unit, weights, f"idle.{resource}")
        for tenant, amount in shares.items():
            result[tenant][resource] = amount
    return result


def share(subscription: Decimal | int, total: Decimal | int) -> Fraction:
    """A tenant's share of the idle pool: its subscribed GPUs / all subscribed GPUs
    (0 when nobody subscribes)."""
    return Fraction(subscription) / Fraction(total) if total else Fraction(0)
