# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot_victims filter: the spot jobs to delete, in kill order."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.times import api_seconds
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    SpotJob,
    known_price,
    long_lived,
    parse_count,
    parse_price,
    parse_time,
    take_victims,
    victim_entry,
)

_FIELDS = ("name", "namespace", "price", "gpus", "replicas", "started_at")
_REQUIRED = frozenset(_FIELDS) - {"price"}


def _fields(job: Any, i: int) -> tuple[str, str, Decimal, int, int, float]:
    """``jobs[i]`` read: namespace, name, price, GPUs, pods and start (``SpotJob``'s
    order). What a job map usually holds (a dict, a known price, whole numbers, a
    time as the API server writes it) is taken as it is; anything else goes through
    the parse functions, which word the errors."""
    if not isinstance(job, dict) or not job.keys() >= _REQUIRED:
        if not isinstance(job, Mapping):
            raise PlatformValidationError(
                [f"jobs[{i}]: {job!r} must be a mapping with {', '.join(_FIELDS)}"]
            )
        missing = [k for k in _FIELDS if k not in job and k != "price"]
        if missing:
            raise PlatformValidationError(
                [f"jobs[{i}]: missing {', '.join(missing)}; each job needs {', '.join(_FIELDS)}"]
            )
    namespace, name = job["namespace"], job["name"]
    for key, value in (("name", name), ("namespace", namespace)):
        if not isinstance(value, str) or not value:
            raise PlatformValidationError(
                [f"jobs[{i}].{key}: {value!r} must be a non-empty string"]
            )
    price = job.get("price")
    known = known_price(price)
    if known is None:
        # Prices come from annotations as strings; a non-number is refused.
        known = parse_price(price.strip() if isinstance(price, str) else price, f"jobs[{i}].price")
    gpus, pods = job["gpus"], job["replicas"]
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        gpus = parse_count(gpus, f"jobs[{i}].gpus")
    if isinstance(pods, bool) or not isinstance(pods, int) or pods < 1:
        pods = parse_count(pods, f"jobs[{i}].replicas", minimum=1)
    started = api_seconds(job["started_at"])
    if started is None:
        started = parse_time(job["started_at"], f"jobs[{i}].started_at")
    return namespace, name, known, gpus, pods, started


def _record(job: Any, i: int) -> SpotJob:
    """``jobs[i]`` as the victim rules see it."""
    return SpotJob(*_fields(job, i))


def spot_victims(jobs: Any, need: Any, allow_partial: bool = False) -> list[Any]:
    """The jobs to delete to free ``need`` GPUs, in kill order (rule
    spot-victim-order, rule spot-victim-stop). A missing price counts as 0."""
    if not isinstance(jobs, list | tuple):
        raise AnsibleFilterError(f"spot_victims: jobs: {jobs!r} must be a list of job mappings")
    if not isinstance(allow_partial, bool):
        raise AnsibleFilterError(
            f"spot_victims: allow_partial: {allow_partial!r} must be true or false"
        )
    try:
        count = parse_count(need, "need")
        # One flat entry per job holding GPUs, carrying the job map itself.
        entries = []
        with long_lived():
            for i, job in enumerate(jobs):
                namespace, name, price, gpus, pods, started = _fields(job, i)
                if gpus > 0:
                    entries.append(
                        victim_entry(price, pods, gpus, started, namespace, name, i, job)
                    )
            return take_victims(entries, count, allow_partial) if count else []
    except PlatformValidationError as exc:
        raise AnsibleFilterError(f"spot_victims: {exc}") from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"spot_victims": spot_victims}
