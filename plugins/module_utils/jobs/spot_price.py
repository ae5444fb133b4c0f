# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A spot job's price per GPU-hour: rule spot-price, and the annotation text of a valid
price. Pure: no I/O.

One rule for every caller: the job request and manifest checks, the inference service,
the spot market view and the trace benchmarks.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ..common.errors import FieldError
from ..common.names import SPOT_PRICE_DECIMALS, SPOT_PRICE_LIMIT


def spot_price_errors(value: Any, field_name: str = "spot_price") -> list[FieldError]:
    """Rule spot-price: a spot job carries a finite decimal price per GPU-hour greater than 0
    and below SPOT_PRICE_LIMIT, with at most SPOT_PRICE_DECIMALS decimal places (the bounds
    the admission policy's pattern holds every spot Job to, so a price the module accepts is
    never refused by the API server, and every consumer compares plain numbers)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [
            FieldError(
                field_name,
                "a spot job needs its price per GPU-hour (for example '0.3'); the platform reclaims the "
                "cheapest spot jobs first",
            )
        ]
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return [
            FieldError(field_name, f"{value!r} is not a number; give a decimal price such as '0.3'")
        ]
    if isinstance(value, bool) or not number.is_finite() or number <= 0:
        return [
            FieldError(
                field_name, f"{value!r} must be a decimal price greater than 0, such as '0.3'"
            )
        ]
    if number >= SPOT_PRICE_LIMIT:
        return [
            FieldError(
                field_name,
                f"{value!r} is too large; a spot price must be below {SPOT_PRICE_LIMIT} per "
                "GPU-hour",
            )
        ]
    exponent = number.normalize().as_tuple().exponent
    if isinstance(exponent, int) and -exponent > SPOT_PRICE_DECIMALS:
        return [
            FieldError(
                field_name,
                f"{value!r} has more than {SPOT_PRICE_DECIMALS} decimal places; round it to "
                f"at most {SPOT_PRICE_DECIMALS}",
            )
        ]
    return []


def price_text(value: Any) -> str:
    """The annotation value of a valid price: a plain decimal string."""
    return format(Decimal(str(value).strip()).normalize(), "f")
