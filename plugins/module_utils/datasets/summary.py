# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a ``dataset`` run did, in lines a person reads (rule run-summary).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def dataset_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    head = f"dataset {result.get('dataset')} version {result.get('version')}: "
    phase = result.get("phase")
    if phase == "staging":
        head += f"staging in claim {result.get('claim')} (writable)"
        if result.get("ingest"):
            head += f"; ingest job {result.get('ingest')}"
    elif phase == "published":
        head += f"published read-only as claim {result.get('claim')}"
    else:
        head += "removed; its storage is retained (the platform never deletes a dataset's data)"
    if result.get("cache"):
        head += f"; cached by Fluid Dataset and AlluxioRuntime {result.get('cache')}"
    writes = list(result.get("writes") or [])
    if not writes:
        return [head, "nothing to change"]
    verb = "would write" if check_mode else "wrote"
    return [head, f"{verb} {len(writes)}: {', '.join(writes)}"]
