# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The price table a usage report bills with (pure: no I/O).

The table, per GPU-hour, in the report's currency::

    subscription: {gpu_hour: "2.00", overage_gpu_hour: "3.00"}
    payg:         {gpu_hour: "3.50"}
    spot:         {}          # spot is billed at each job's own bid
    cloud:        {gpu_hour: "5.00"}   # every GPU-hour on a cloud node

* Rule price-table (``price_table_errors``): the table is a mapping with exactly the
  three billing types and ``cloud``; each is a mapping with exactly its price keys (a typo such as
  ``gpu_hours`` would otherwise bill at nothing).
* Rule price (``price_errors``): a price is a decimal number, 0 or more (a string, an
  int or a float; a float is read through its shortest text, so 0.1 is 0.1).

Money is ``decimal.Decimal`` throughout; it is rounded to cents only when a ledger is
written (``ledger.cents``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..common.errors import FieldError, raise_if

# billing type -> the price keys its entry has
PRICE_KEYS: dict[str, tuple[str, ...]] = {
    "subscription": ("gpu_hour", "overage_gpu_hour"),
    "payg": ("gpu_hour",),
    "spot": (),
    "cloud": ("gpu_hour",),
}
LINES = ", ".join(PRICE_KEYS)


@dataclass(frozen=True)
class PriceTable:
    """The validated table: prices per GPU-hour."""

    subscription_gpu_hour: Decimal
    overage_gpu_hour: Decimal
    payg_gpu_hour: Decimal
    cloud_gpu_hour: Decimal

    def view(self) -> dict[str, dict[str, str]]:
        """The table as a ledger writes it (prices as given, not rounded)."""
        return {
            "subscription": {
                "gpu_hour": str(self.subscription_gpu_hour),
                "overage_gpu_hour": str(self.overage_gpu_hour),
            },
            "payg": {"gpu_hour": str(self.payg_gpu_hour)},
            "spot": {},
            "cloud": {"gpu_hour": str(self.cloud_gpu_hour)},
        }


def read_decimal(value: object) -> Decimal | None:
    """``value`` as a finite Decimal, or None. Booleans are not numbers here, and a float
    goes through ``repr`` so that 0.1 reads as 0.1, not its binary neighbour."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        return None
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value).strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def price_errors(field: str, value: object) -> list[FieldError]:
    """Rule price: a decimal number, 0 or more."""
    number = read_decimal(value)
    if number is None:
        return [
            FieldError(
                field,
                f"{value!r} is not a price; a decimal number such as 2.50 is accepted (rule price)",
            )
        ]
    if number < 0:
        return [FieldError(field, f"{value!r} is negative; 0 or more is accepted (rule price)")]
    return []


def _entry_errors(billing_type: str, entry: object) -> list[FieldError]:
    field = f"prices.{billing_type}"
    keys = PRICE_KEYS[billing_type]
    if entry is None and not keys:
        return []  # "spot:" with nothing after it is an empty mapping in YAML terms
    if not isinstance(entry, Mapping):
        wanted = ", ".join(keys) or "no keys: {}"
        return [
            FieldError(
                field,
                f"{entry!r} is not a mapping; one with {wanted} is accepted (rule price-table)",
            )
        ]
    errors = [
        FieldError(
            f"{field}.{key}",
            f"is not given; {billing_type} needs {', '.join(keys)} (rule price-table)",
        )
        for key in keys
        if key not in entry
    ]
    for key in sorted(set(entry) - set(keys), key=str):
        accepted = ", ".join(keys) if keys else "none (spot is billed at each job's bid)"
        errors.append(
            FieldError(
                f"{field}.{key}",
                f"is not a price key of {billing_type}; accepted: {accepted} (rule price-table)",
            )
        )
    for key in keys:
        if key in entry:
            errors += price_errors(f"{field}.{key}", entry[key])
    return errors


def price_table_errors(table: object) -> list[FieldError]:
    """Rule price-table, with rule price for every price."""
    if not isinstance(table, Mapping):
        return [
            FieldError(
                "prices",
                f"{table!r} is not a mapping of {LINES} (rule price-table)",
            )
        ]
    errors = [
        FieldError(
            f"prices.{billing_type}",
            f"is missing; the table prices every line: {LINES} (rule price-table)",
        )
        for billing_type in PRICE_KEYS
        if billing_type not in table
    ]
    for key in sorted(set(table) - set(PRICE_KEYS), key=str):
        errors.append(
            FieldError(
                f"prices.{key}",
                f"is not a line of the ledger; accepted: {LINES} (rule price-table)",
            )
        )
    for billing_type in PRICE_KEYS:
        if billing_type in table:
            errors += _entry_errors(billing_type, table[billing_type])
    return errors


def _price(table: Mapping[str, Any], billing_type: str, key: str) -> Decimal:
    number = read_decimal(table[billing_type][key])
    if number is None:  # narrows the type; rule price passed
        raise AssertionError(f"prices.{billing_type}.{key} passed rule price")
    return number


def parse_prices(table: object) -> PriceTable:
    """The PriceTable, or PlatformValidationError naming each broken rule."""
    raise_if(price_table_errors(table))
    if not isinstance(table, Mapping):  # narrows the type; rule price-table passed
        raise AssertionError("prices passed rule price-table")
    return PriceTable(
        subscription_gpu_hour=_price(table, "subscription", "gpu_hour"),
        overage_gpu_hour=_price(table, "subscription", "overage_gpu_hour"),
        payg_gpu_hour=_price(table, "payg", "gpu_hour"),
        cloud_gpu_hour=_price(table, "cloud", "gpu_hour"),
    )
