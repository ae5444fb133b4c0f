# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference_service_manifests filter: a model service's manifests without a cluster
(inference/render)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.render import render


def inference_service_manifests(params: Any) -> list[dict[str, Any]]:
    try:
        return render(params)
    except PlatformValidationError as exc:
        raise AnsibleFilterError(f"inference_service_manifests: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"inference_service_manifests": inference_service_manifests}
