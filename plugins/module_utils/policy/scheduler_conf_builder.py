# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Builds ``volcano-scheduler.conf`` for Volcano 1.15.1: the platform's default
actions and tiers, the configuration as a mapping and as YAML text, and the
ConfigMap the chart's vc-scheduler reads. Pure: no I/O.

The defaults pass every rule of ``scheduler_conf_errors`` (``scheduler_conf_rules``;
the comments name the rules that shape them); callers check a configuration of their
own with it before writing it. Nothing here checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ..common.names import LABEL_MANAGED_BY, MANAGED_BY, VOLCANO_NAMESPACE
from . import volcano_catalog as vc

DEFAULT_ACTIONS = (
    "enqueue",
    "allocate",
    "preempt",
    "gangpreempt",
    "reclaim",
    "gangreclaim",
    "backfill",
)


DEFAULT_TIERS: tuple[dict[str, Any], ...] = (
    # Rule sla-before-capacity: admission past a full queue for jobs with a waiting time.
    {"plugins": [{"name": "sla", "enableJobOrder": False, "enableJobPipelined": False}]},
    {
        "plugins": [
            {"name": "priority"},
            {"name": "gang"},
            {"name": "conformance"},
            # Rule tenant-ancestor-reclaim: reclaim also checks the victim's parent.
            {"name": "capacity", "enableHierarchy": True, "arguments": {"ancestorReclaimLevel": 1}},
        ]
    },
    {
        "plugins": [
            {"name": "drf", "enablePreemptable": False},
            {"name": "predicates"},
            {"name": "nodeorder", "arguments": {"leastrequested.weight": 0}},
            {
                "name": "binpack",
                "arguments": {
                    "binpack.weight": 10,
                    "binpack.cpu": 5,
                    "binpack.memory": 2,
                    "binpack.resources": "nvidia.com/gpu",
                    "binpack.resources.nvidia.com/gpu": 10,
                },
            },
            {"name": "network-topology-aware", "arguments": {"weight": 10}},
            # Rule node-groups-need-nodegroup: queues bound to IDC or cloud node groups
            # (hybrid/queues). Not strict, so until nodes are grouped it changes nothing.
            {
                "name": "nodegroup",
                "enableHierarchy": True,
                "arguments": {"strict": False, "enablePreferredOrder": True},
            },
        ]
    },
)


def _plain(value: Any) -> Any:
    """Plain Python values (templating engines hand over str/int/dict subclasses that YAML's
    safe dumper refuses)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def build_scheduler_conf(
    actions: Sequence[str] = DEFAULT_ACTIONS,
    tiers: Sequence[Mapping[str, Any]] = DEFAULT_TIERS,
    configurations: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The configuration as a mapping: actions joined the way Volcano splits them."""
    conf: dict[str, Any] = {
        "actions": ", ".join(str(a).strip() for a in actions),
        "tiers": [
            {"plugins": [dict(plugin) for plugin in tier.get("plugins", [])]} for tier in tiers
        ],
    }
    if configurations:
        conf["configurations"] = [dict(c) for c in configurations]
    return conf


def render_scheduler_conf(
    actions: Sequence[str] = DEFAULT_ACTIONS,
    tiers: Sequence[Mapping[str, Any]] = DEFAULT_TIERS,
    configurations: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The YAML text for the ConfigMap key ``volcano-scheduler.conf``."""
    if yaml is None:  # pragma: no cover
        raise RuntimeError("PyYAML is needed to render the scheduler configuration")
    conf = _plain(build_scheduler_conf(actions, tiers, configurations))
    return yaml.safe_dump(conf, sort_keys=False, default_flow_style=False)


def scheduler_configmap(conf_text: str) -> dict[str, Any]:
    """The ConfigMap the chart's vc-scheduler reads (installer/helm/chart/volcano/templates/scheduler.yaml)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": vc.SCHEDULER_CONFIGMAP,
            "namespace": VOLCANO_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
        },
        "data": {vc.SCHEDULER_CONF_KEY: conf_text},
    }
