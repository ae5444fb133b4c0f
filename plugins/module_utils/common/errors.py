# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation errors that name the field, the value and the rule.

Every refused input in the collection is one ``FieldError``; a check that
finds several collects them into a ``PlatformValidationError`` so the caller
sees all of them at once, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One broken rule: ``field`` is a dotted path into the input."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class PlatformValidationError(ValueError):
    """Raised by the core when an input breaks one or more rules."""

    def __init__(self, errors: Iterable[FieldError | str]):
        self.errors = [e if isinstance(e, FieldError) else FieldError("", str(e)) for e in errors]
        super().__init__("; ".join(str(e) for e in self.errors))

    @property
    def messages(self) -> list[str]:
        return [str(e) for e in self.errors]


def raise_if(errors: Iterable[FieldError]) -> None:
    """Raise one error carrying every problem found, or return quietly."""
    collected = list(errors)
    if collected:
        raise PlatformValidationError(collected)


class Refused(Exception):
    """Valid input that the cluster's state forbids (running work, a busy lease, a
    shortfall). ``extra`` is reported with the failure, for example what runs."""

    def __init__(self, msg: str, **extra: object):
        super().__init__(msg)
        self.extra = extra


class PartialWrite(Exception):
    """Writes that stopped part-way: ``done`` names what was already written, so the
    report never says ``changed: false`` after a write. Every write of the collection
    is idempotent: fixing ``cause`` and running again finishes the change."""

    def __init__(self, what: str, done: list[str], cause: BaseException, **report: object):
        super().__init__(f"{what} failed after {len(done)} change(s): {cause}")
        self.what = what
        self.done = list(done)
        self.cause = cause
        self.report = report
