# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cloud scaler filters: the manifests that scale the cloud node pool on the age of a
queue's oldest pending job (rules scale-signal, scale-signal-inputs).

Every filter takes the same parameters (a mapping: name, namespace, target_deployment,
queue, prometheus_url, threshold_seconds, cooldown_seconds, min_replicas, max_replicas),
so one variable renders either path: KEDA, or prometheus-adapter and an HPA."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import scale

HPA_PARAMS = tuple(p for p in scale.PARAMS if p != "prometheus_url")


def _checked(params: Any, filter_name: str, url_required: bool = False) -> Mapping[str, Any]:
    errors = scale.scale_signal_errors(params, url_required=url_required)
    if errors:
        raise AnsibleFilterError(f"{filter_name}: " + "; ".join(str(e) for e in errors))
    return params


def keda_scaled_object(params: Any) -> dict[str, Any]:
    """The KEDA ScaledObject (keda.sh/v1alpha1) of the cloud pool."""
    return scale.keda_scaled_object(**_checked(params, "keda_scaled_object", url_required=True))


def external_hpa(params: Any) -> dict[str, Any]:
    """The autoscaling/v2 HPA on prometheus-adapter's external metric; prometheus_url,
    when given, is checked and not used (the adapter knows its Prometheus)."""
    values = _checked(params, "external_hpa")
    return scale.external_hpa(**{k: v for k, v in values.items() if k in HPA_PARAMS})


def prometheus_adapter_rule(params: Any) -> dict[str, Any]:
    """prometheus-adapter's externalRules entry; the same for every queue, the
    parameters are checked so that one variable feeds every filter."""
    _checked(params, "prometheus_adapter_rule")
    return scale.prometheus_adapter_rule()


def scale_signal_errors(params: Any, url_required: bool = False) -> list[str]:
    """Every broken rule of the parameters as a message naming the field; [] when valid."""
    if not isinstance(url_required, bool):
        raise AnsibleFilterError(
            f"scale_signal_errors: url_required: {url_required!r} must be true or false"
        )
    return [str(e) for e in scale.scale_signal_errors(params, url_required=url_required)]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "keda_scaled_object": keda_scaled_object,
            "external_hpa": external_hpa,
            "prometheus_adapter_rule": prometheus_adapter_rule,
            "scale_signal_errors": scale_signal_errors,
        }
