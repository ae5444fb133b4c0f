# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The chart roles' own wait for a Helm release (bringup/rollout): which workloads a
release has, which of them are not ready yet, and a Helm timeout in seconds."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.bringup.rollout import (
    go_duration_seconds,
    release_workloads,
    rollout_waiting,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)


def _refused(name: str, exc: PlatformValidationError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{name}: {exc}")


def helm_release_workloads(documents: Any, namespace: Any) -> list[dict[str, str]]:
    """The release's Deployments, StatefulSets and DaemonSets (rule release-workloads)."""
    if not isinstance(namespace, str) or not namespace:
        raise AnsibleFilterError(
            f"helm_release_workloads: namespace: {namespace!r} must be the release's namespace"
        )
    if isinstance(documents, str | bytes) or not hasattr(documents, "__iter__"):
        raise AnsibleFilterError(
            f"helm_release_workloads: {documents!r} must be the manifest's documents"
            " (helm_info's status.manifest | from_yaml_all)"
        )
    try:
        return release_workloads(list(documents), namespace)
    except PlatformValidationError as exc:
        raise _refused("helm_release_workloads", exc) from None


def helm_rollout_waiting(live: Any, workloads: Any) -> list[str]:
    """What is not ready yet among ``workloads`` (rule workload-ready), given the live
    objects ``live`` (k8s_info's resources)."""
    for name, value in (("live", live), ("workloads", workloads)):
        if not isinstance(value, list):
            raise AnsibleFilterError(f"helm_rollout_waiting: {name}: {value!r} must be a list")
    bad = [
        w for w in workloads if not isinstance(w, dict) or {"kind", "name", "namespace"} - set(w)
    ]
    if bad:
        raise AnsibleFilterError(
            f"helm_rollout_waiting: workloads: {bad[0]!r} must have kind, name and namespace"
            " (helm_release_workloads' items)"
        )
    return rollout_waiting(workloads, [o for o in live if isinstance(o, dict)])


def go_duration_to_seconds(text: Any) -> int:
    """A Helm timeout (``10m0s``) in whole seconds (rule go-duration)."""
    try:
        return go_duration_seconds(text)
    except PlatformValidationError as exc:
        raise _refused("go_duration_to_seconds", exc) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "helm_release_workloads": helm_release_workloads,
            "helm_rollout_waiting": helm_rollout_waiting,
            "go_duration_to_seconds": go_duration_to_seconds,
        }
