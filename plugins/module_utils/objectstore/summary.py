# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a ``tenant_object_store`` run did, in lines a person reads (rule run-summary).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.names import namespace_name
from .credentials import CREDENTIALS_NAME


def store_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    tenant = result.get("tenant") or params.get("tenant")
    writes = list(result.get("writes") or [])
    if params.get("state") == "absent":
        head = (
            f"tenant {tenant}: account {result.get('account')} and its credentials "
            + ("would be removed" if check_mode else "removed")
            + "; its buckets and their objects are kept"
        )
    else:
        buckets = ", ".join(sorted((result.get("buckets") or {}).values()))
        head = (
            f"tenant {tenant}: buckets {buckets} of account {result.get('account')}; credentials "
            f"in Secret and ServiceAccount {namespace_name(str(tenant))}/{CREDENTIALS_NAME}"
        )
        if result.get("new_key"):
            head += " (a new key)"
    if not writes:
        return [head, "nothing to change"]
    verb = "would write" if check_mode else "wrote"
    tail = f"{verb} {len(writes)}: {', '.join(writes)}"
    if check_mode:
        tail += " (the store is not written in check mode; the cluster's writes were dry runs)"
    return [head, tail]


def retention_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    rows = list(result.get("buckets") or [])
    if not rows:
        return ["no tenant checkpoint bucket to sweep"]
    verb = "would delete" if check_mode else "deleted"
    lines = []
    for row in rows:
        gone = row.get("deleted") or []
        line = (
            f"{row['bucket']} (tenant {row['tenant']}): {row['checkpoints']} checkpoint(s), "
            f"the newest {result.get('keep')} of each job kept"
        )
        if gone:
            line += (
                f"; {verb} {len(gone)} ({row['objects_deleted']} object(s), "
                f"{row['bytes_freed']} bytes): {', '.join(gone[:5])}"
                + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
            )
        else:
            line += "; nothing to delete"
        lines.append(line)
    return lines
