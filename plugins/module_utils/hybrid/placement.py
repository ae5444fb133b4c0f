# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a job's pods may run: IDC only, IDC first, or the cloud too.

Rules held here:

* Rule placement (``placement_errors``): ``local-only``, ``local-first`` or
  ``cloud-ok``; compliance-restricted jobs are ``local-only`` (rule
  compliance-local-only).
* Rule placement-pod-spec (``placement_pod_spec``): what each placement puts in
  a pod spec. The queue's node-group affinity decides which queues reach cloud
  nodes at all (``hybrid/queues``); the pod's own affinity and toleration decide
  where inside that:

  - ``local-only``: required node affinity ``platform.io/node-location NotIn
    [cloud]`` (NotIn also matches a node without the label), no toleration;
  - ``local-first``: the same expression as a preferred term of weight 100, and
    the Virtual Kubelet taint tolerated;
  - ``cloud-ok``: the taint tolerated, no preference.

  A compliance-restricted pod also carries ``platform.io/compliance:
  restricted`` and, for a zone, requires ``platform.io/compliance-zone In
  [zone]``; the ``gpucloud-compliance-placement`` admission policy refuses one
  that does not (``policy/compliance``).
* Rule cloud-patterns (``cloud_patterns``): a pod that may run on a cloud node
  copies its data in first (a prefetch init container onto a node-local
  volume) and saves a checkpoint when the spot instance is taken away (preStop,
  a 5-minute grace period), as the second design document prescribes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    CLOUD_TAINT_KEY,
    COMPLIANCE_RESTRICTED,
    LABEL_COMPLIANCE,
    LABEL_COMPLIANCE_ZONE,
    LABEL_NODE_LOCATION,
    dns_label_errors,
    dns_subdomain_errors,
)
from ..common.quantity import is_positive

PLACEMENTS = ("local-only", "local-first", "cloud-ok")
CLOUD_PLACEMENTS = ("local-first", "cloud-ok")
PREFETCH_KEYS = ("image", "command", "path", "size_limit", "storage_class")
PREFETCH_VOLUME = "prefetch"
PREFETCH_PATH = "/data/local"
CLOUD_GRACE_SECONDS = 300  # the design's 5-minute window to checkpoint on a spot instance
PREFERRED_WEIGHT = 100

NOT_CLOUD = {"key": LABEL_NODE_LOCATION, "operator": "NotIn", "values": ["cloud"]}


def _not_cloud() -> dict[str, Any]:
    """A fresh copy: every pod spec owns its lists."""
    return {**NOT_CLOUD, "values": list(NOT_CLOUD["values"])}


CLOUD_TOLERATION = {"key": CLOUD_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def placement_errors(
    placement: Any, compliance: Any = False, compliance_zone: Any = None, checkpoint: Any = None
) -> list[FieldError]:
    """Rules placement and compliance-local-only (and, for a cloud placement, rule
    cloud-patterns: a checkpoint command)."""
    errors: list[FieldError] = []
    if placement is not None and placement not in PLACEMENTS:
        return [FieldError("placement", f"{placement!r} is not one of {', '.join(PLACEMENTS)}")]
    if not isinstance(compliance, bool):
        errors.append(FieldError("compliance", f"{compliance!r} must be true or false"))
    if compliance is True and placement in CLOUD_PLACEMENTS:
        errors.append(
            FieldError(
                "placement",
                f"{placement!r}: a compliance-restricted job runs in the IDC only "
                "(rule compliance-local-only); use local-only",
            )
        )
    if compliance_zone is not None:
        errors += dns_label_errors("compliance_zone", compliance_zone)
        if compliance is not True:
            errors.append(
                FieldError("compliance_zone", f"{compliance_zone!r} needs compliance: true")
            )
    if placement in CLOUD_PLACEMENTS and not checkpoint:
        errors.append(
            FieldError(
                "checkpoint_command",
                f"is required with placement {placement!r}: a cloud GPU node is a spot instance "
                "that may be taken away, and the job saves a checkpoint when it is (rule cloud-patterns)",
            )
        )
    return errors


def effective_placement(placement: str | None, compliance: bool) -> str | None:
    """A compliance-restricted job without a placement is local-only."""
    return "local-only" if compliance and placement is None else placement


def placement_pod_spec(
    placement: str | None, compliance: bool = False, compliance_zone: str | None = None
) -> dict[str, Any]:
    """Rule placement-pod-spec: ``affinity`` and ``tolerations`` for a pod spec (empty
    for a job without a placement)."""
    placement = effective_placement(placement, compliance)
    out: dict[str, Any] = {}
    required = []
    if placement == "local-only":
        required.append(_not_cloud())
    if compliance and compliance_zone:
        required.append(
            {"key": LABEL_COMPLIANCE_ZONE, "operator": "In", "values": [compliance_zone]}
        )
    node_affinity: dict[str, Any] = {}
    if required:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": required}]
        }
    if placement == "local-first":
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": PREFERRED_WEIGHT, "preference": {"matchExpressions": [_not_cloud()]}}
        ]
    if node_affinity:
        out["affinity"] = {"nodeAffinity": node_affinity}
    if placement in CLOUD_PLACEMENTS:
        out["tolerations"] = [dict(CLOUD_TOLERATION)]
    return out


def compliance_labels(compliance: bool) -> dict[str, str]:
    return {LABEL_COMPLIANCE: COMPLIANCE_RESTRICTED} if compliance else {}


def prefetch_errors(prefetch: Any) -> list[FieldError]:
    """Rule cloud-patterns: a prefetch is an image and a command (and a path)."""
    if prefetch is None:
        return []
    if not isinstance(prefetch, Mapping):
        return [FieldError("prefetch", f"{prefetch!r} must be a mapping with image and command")]
    errors = [
        FieldError(f"prefetch.{k}", f"unknown key; a prefetch has {', '.join(PREFETCH_KEYS)}")
        for k in sorted(set(prefetch) - set(PREFETCH_KEYS))
    ]
    if not isinstance(prefetch.get("image"), str) or not prefetch.get("image"):
        errors.append(
            FieldError("prefetch.image", f"{prefetch.get('image')!r} must be an image reference")
        )
    command = prefetch.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        errors.append(
            FieldError("prefetch.command", f"{command!r} must be a non-empty list of strings")
        )
    path = prefetch.get("path", PREFETCH_PATH)
    if not isinstance(path, str) or not path.startswith("/"):
        errors.append(FieldError("prefetch.path", f"{path!r} must be an absolute path"))
    return errors + prefetch_volume_errors(prefetch)


def prefetch_volume_errors(prefetch: Mapping[str, Any]) -> list[FieldError]:
    """Rule prefetch-volume: ``size_limit`` is a positive quantity; ``storage_class`` (a
    node-local class) needs it, as the size its volume asks for."""
    errors = []
    size = prefetch.get("size_limit")
    if size is not None and not is_positive(size):
        errors.append(
            FieldError("prefetch.size_limit", f"{size!r} must be a positive quantity (50Gi)")
        )
    storage_class = prefetch.get("storage_class")
    if storage_class is not None:
        errors += dns_subdomain_errors("prefetch.storage_class", storage_class)
        if size is None:
            errors.append(
                FieldError(
                    "prefetch.storage_class", "needs size_limit: the size its volume asks for"
                )
            )
    return errors


def prefetch_volume(prefetch: Mapping[str, Any]) -> dict[str, Any]:
    """Rule prefetch-volume: where the prefetched data lives, bounded when ``size_limit``
    is given. With ``storage_class``, a volume of that node-local class made with the pod
    and gone with it (a generic ephemeral volume); otherwise an ``emptyDir``, the kubelet
    evicting the pod that writes beyond the limit."""
    size = prefetch.get("size_limit")
    if prefetch.get("storage_class"):
        return {
            "name": PREFETCH_VOLUME,
            "ephemeral": {
                "volumeClaimTemplate": {
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": prefetch["storage_class"],
                        "resources": {"requests": {"storage": str(size)}},
                    }
                }
            },
        }
    return {"name": PREFETCH_VOLUME, "emptyDir": {"sizeLimit": str(size)} if size else {}}


def cloud_patterns(placement: str | None, prefetch: Mapping[str, Any] | None) -> dict[str, Any]:
    """Rule cloud-patterns for one pod: ``init_containers``, ``volumes``, ``mounts`` (for
    the main container) and ``grace`` (seconds, or None to keep the class's)."""
    out: dict[str, Any] = {"init_containers": [], "volumes": [], "mounts": [], "grace": None}
    if placement not in CLOUD_PLACEMENTS:
        return out
    out["grace"] = CLOUD_GRACE_SECONDS
    if prefetch:
        path = prefetch.get("path") or PREFETCH_PATH
        mount = {"name": PREFETCH_VOLUME, "mountPath": path}
        out["init_containers"] = [
            {
                "name": "data-prefetch",
                "image": prefetch["image"],
                "command": list(prefetch["command"]),
                "volumeMounts": [mount],
            }
        ]
        out["volumes"] = [prefetch_volume(prefetch)]
        out["mounts"] = [mount]
    return out
