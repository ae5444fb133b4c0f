# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module gpu_node_probe's flow, its pure steps (``kube/flow``): the request, what the
host showed (the facts), the report planned from them.

The reads are ``nodes/probe_io``'s, made on the GPU host, not against the cluster
(``kube/runner.run_host_flow``). ``rendered`` is not offered: a host with nothing on it is
not a host to preflight; what the report says is what the host holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, raise_if
from ..kube.flow import fact_lists
from .preflight import preflight_report

# The options rule node-preflight reads, in the order the report's settings list them.
SETTINGS = (
    "nvidia_smi",
    "driver_min_version",
    "expected_gpus",
    "runtime_pattern",
    "runtime_config_paths",
    "rdma",
)
SMI_KEYS = ("rc", "stdout", "stderr", "msg")


@dataclass(frozen=True)
class ProbeRequest:
    """What to look for on the host, and the name the report is for."""

    host: str
    settings: tuple[tuple[str, Any], ...]

    def setting(self, key: str) -> Any:
        return dict(self.settings)[key]


@dataclass(frozen=True)
class ProbePlan:
    """What the host showed (rule node-preflight's input) and the report made of it."""

    observed: dict[str, Any]
    report: dict[str, Any]


def parse_probe(params: Mapping[str, Any]) -> ProbeRequest:
    """The module's options as a request; nothing after it sees ``params``."""
    settings = []
    for key in SETTINGS:
        value = params[key]
        settings.append((key, tuple(value) if isinstance(value, list) else value))
    return ProbeRequest(host=params["host"], settings=tuple(settings))


def settings_of(request: ProbeRequest) -> dict[str, Any]:
    """The settings as rule node-preflight takes them (lists as the options gave them)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in request.settings}


def plan_probe(request: ProbeRequest, observed: Mapping[str, Any]) -> ProbePlan:
    """Rule node-preflight over what the host showed."""
    facts = dict(observed)
    return ProbePlan(
        observed=facts, report=preflight_report(request.host, facts, settings_of(request))
    )


def report_probe(_request: ProbeRequest, planned: ProbePlan) -> dict[str, Any]:
    """The module's result: it changes nothing, in check mode or not."""
    return {"changed": False, "observed": planned.observed, "report": planned.report}


def facts_out(observed: Mapping[str, Any]) -> dict[str, Any]:
    """What ``gathered`` returns: the observations as RV(observed) holds them."""
    return dict(observed)


def facts_in(_request: ProbeRequest, data: Mapping[str, Any]) -> dict[str, Any]:
    """The observations given to ``parsed`` (as ``gathered`` returned them), checked."""
    smi = data.get("smi")
    errors = []
    if not isinstance(smi, Mapping):
        errors.append(FieldError("facts.smi", "must be a dict, as state: gathered returns it"))
    elif not isinstance(smi.get("rc"), int) or isinstance(smi.get("rc"), bool):
        errors.append(FieldError("facts.smi.rc", "must be an integer (nvidia-smi's exit code)"))
    for key in ("kmod_loaded",):
        if not isinstance(data.get(key), bool):
            errors.append(FieldError(f"facts.{key}", "must be true or false"))
    if not isinstance(data.get("runtime_rc"), int) or isinstance(data.get("runtime_rc"), bool):
        errors.append(FieldError("facts.runtime_rc", "must be an integer (0: the pattern found)"))
    raise_if(errors)
    devices = data.get("rdma_devices")
    if devices is not None:
        (devices,) = fact_lists(data, "rdma_devices")
        devices = [str(d) for d in devices]
    return {
        "smi": {key: smi.get(key, 0 if key == "rc" else "") for key in SMI_KEYS},
        "kmod_loaded": data["kmod_loaded"],
        "runtime_rc": data["runtime_rc"],
        "rdma_devices": devices,
    }
