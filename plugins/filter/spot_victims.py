# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot_victims filter: the spot jobs to delete, in kill order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    SpotJob,
    choose_victims,
    parse_count,
    parse_price,
    parse_time,
)

_FIELDS = ("name", "namespace", "price", "gpus", "replicas", "started_at")


def _record(job: Any, i: int) -> SpotJob:
    where = f"jobs[{i}]"
    if not isinstance(job, Mapping):
        raise PlatformValidationError(
            [f"{where}: {job!r} must be a mapping with {', '.join(_FIELDS)}"]
        )
    missing = [k for k in _FIELDS if k not in job and k != "price"]
    if missing:
        raise PlatformValidationError(
            [f"{where}: missing {', '.join(missing)}; each job needs {', '.join(_FIELDS)}"]
        )
    for key in ("name", "namespace"):
        if not isinstance(job[key], str) or not job[key]:
            raise PlatformValidationError(
                [f"{where}.{key}: {job[key]!r} must be a non-empty string"]
            )
    price = job.get("price")
    if isinstance(price, str):
        # Prices come from annotations as strings; a non-number is refused.
        price = price.strip()
    return SpotJob(
        namespace=job["namespace"],
        name=job["name"],
        price=parse_price(price, f"{where}.price"),
        gpus=parse_count(job["gpus"], f"{where}.gpus"),
        pods=parse_count(job["replicas"], f"{where}.replicas", minimum=1),
        started=parse_time(job["started_at"], f"{where}.started_at"),
    )


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
        records = [_record(job, i) for i, job in enumerate(jobs)]
        chosen = choose_victims(records, count, allow_partial=allow_partial)
    except PlatformValidationError as exc:
        raise AnsibleFilterError(f"spot_victims: {exc}") from None
    position = {id(r): i for i, r in enumerate(records)}
    return [jobs[position[id(r)]] for r in chosen]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"spot_victims": spot_victims}
