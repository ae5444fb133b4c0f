# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Prometheus HTTP API answer says (pure: no I/O).

* Rule prometheus-answer (``matrix_of``): a ``query_range`` answer is usable when it is
  JSON with ``status: success`` and a ``data.resultType`` of ``matrix``; otherwise the
  reason, with Prometheus's own ``errorType`` and ``error`` when it gave them (it does
  with HTTP 400, 422 and 503, for example for a query of more than 11,000 points).
* Rule metering-resolution (``interval_of``): the evaluation interval, in seconds, of the
  rule group that records a rule, from a ``/api/v1/rules`` answer; a Prometheus that
  does not load the platform's rules cannot bill.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any


class AnswerError(ValueError):
    """An answer that is not a usable matrix; the message says why."""


def read_json(body: bytes | str) -> Any:
    """The JSON ``body`` holds, or None when it is not JSON."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def error_of(answer: Any) -> str | None:
    """Prometheus's reason in an answer of ``status: error``, or None."""
    if not isinstance(answer, dict) or answer.get("status") != "error":
        return None
    kind, text = answer.get("errorType") or "error", answer.get("error") or "no reason given"
    return f"{kind}: {text}"


def _success_data(body: bytes | str) -> dict[str, Any]:
    answer = read_json(body)
    if not isinstance(answer, dict):
        raise AnswerError(f"the answer is not a JSON object: {str(body)[:200]!r}")
    if answer.get("status") != "success":
        raise AnswerError(
            f"the answer's status is {answer.get('status')!r}, not 'success' "
            f"({error_of(answer) or 'no reason given'})"
        )
    return answer.get("data") or {}


def interval_of(body: bytes | str, rule: str) -> Decimal:
    """Rule metering-resolution: the interval of the group recording ``rule``."""
    for group in _success_data(body).get("groups") or []:
        if any(r.get("name") == rule for r in group.get("rules") or []):
            try:
                interval = Decimal(str(group.get("interval")))
            except InvalidOperation:
                interval = Decimal(0)
            if not interval.is_finite() or interval <= 0:
                raise AnswerError(f"rule group {group.get('name')!r} has no usable interval")
            return interval
    raise AnswerError(
        f"no rule group records {rule}: this Prometheus does not load the platform's rules "
        "(the monitoring role's PrometheusRule gpucloud-platform)"
    )


def matrix_of(body: bytes | str) -> list[dict[str, Any]]:
    """Rule prometheus-answer: the series of a ``query_range`` answer, or AnswerError."""
    data = _success_data(body)
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise AnswerError(f"the answer is a {data.get('resultType')!r}, not a matrix of series")
    return data["result"]
