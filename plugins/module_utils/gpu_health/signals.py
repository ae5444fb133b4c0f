# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU nodes are unhealthy, and why (pure: no I/O).

Two signals, either enough:

* a Node condition whose type is one of ``unhealthy_conditions`` with status ``True``
  (a node-problem-detector custom plugin is how a site usually sets one);
* from Prometheus (dcgm-exporter 4.x; the node is the series' ``Hostname`` label, or
  ``hostname`` as ``observability/alert_rules`` reads it): a fatal XID
  (``max_over_time(DCGM_FI_DEV_XID_ERRORS[window])`` is one of ``fatal_xids``) or a failed
  row remap (``DCGM_FI_DEV_ROW_REMAP_FAILURE > 0``).

The PromQL lives here only (``xid_query``, ``ROW_REMAP_QUERY``): the service asks it, the
docs and the tests quote it.

* Rule gpu-unhealthy (``unhealthy_nodes``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.names import GPU_UNHEALTHY_CONDITIONS

XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
ROW_REMAP_METRIC = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
# dcgm-exporter names the node in Hostname (its own label) and, as the platform's
# alert rules read it, hostname; a series may carry either.
NODE_LABELS = ("Hostname", "hostname")
_BY = "max by (Hostname, hostname, gpu)"

# A node-problem-detector custom plugin reporting the GPUs (for example on nvidia-smi or
# DCGM health checks) sets a condition of its own name; GpuUnhealthy is the name the
# platform's docs give it (common/names, shared with the event source).
DEFAULT_UNHEALTHY_CONDITIONS = GPU_UNHEALTHY_CONDITIONS
# The XIDs of NVIDIA's XID catalogue whose recommended action is a GPU reset, a node
# reboot or a hardware check, not an application fix: 48 double-bit ECC error, 63 and 64
# ECC page retirement / row remapping event and failure, 74 NVLink error, 79 GPU has
# fallen off the bus, 92 high single-bit ECC rate, 94 contained and 95 uncontained ECC
# error, 119 and 120 GSP RPC timeout and GSP error. The XIDs an application causes (13
# graphics engine exception, 31 MMU fault, 43 the application stopped, 45 preemptive
# cleanup) are left out: a tenant's bug must not take a node out of service.
DEFAULT_FATAL_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
DEFAULT_XID_WINDOW = "10m"


def xid_query(window: str) -> str:
    """The XID query: per node and GPU, the largest XID code dcgm-exporter reported within
    ``window`` (the metric holds the last XID seen, 0 for none)."""
    return f"{_BY} (max_over_time({XID_METRIC}[{window}])) > 0"


# The failed row remaps: per node and GPU, above 0 when the GPU's memory could not remap a
# failing row (the GPU needs a reset and, when it recurs, a replacement).
ROW_REMAP_QUERY = f"{_BY} ({ROW_REMAP_METRIC}) > 0"


def series_node(series: Mapping[str, Any]) -> str:
    """The node a dcgm-exporter series is about ("" for none)."""
    metric = series.get("metric") or {}
    return next((str(metric[k]) for k in NODE_LABELS if metric.get(k)), "")


def series_value(series: Mapping[str, Any]) -> float | None:
    """The newest value of a series (an instant vector's ``value`` or a matrix's last
    point); None when it is not a number."""
    point = series.get("value") or ((series.get("values") or [None])[-1])
    try:
        return float(point[1]) if point else None
    except (TypeError, ValueError, IndexError):
        return None


def condition_reasons(node: Mapping[str, Any], conditions: Iterable[str]) -> list[str]:
    """The node's conditions of the types ``conditions`` whose status is True."""
    wanted = set(conditions)
    out = []
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") in wanted and cond.get("status") == "True":
            why = cond.get("message") or cond.get("reason") or ""
            out.append(f"condition {cond['type']}" + (f": {why}" if why else ""))
    return out


def unhealthy_nodes(
    nodes: Iterable[Mapping[str, Any]],
    conditions: Iterable[str],
    fatal_xids: Iterable[int],
    xid_series: Iterable[Mapping[str, Any]] = (),
    row_remap_series: Iterable[Mapping[str, Any]] = (),
) -> dict[str, tuple[str, ...]]:
    """Rule gpu-unhealthy: node name -> why its GPUs are unhealthy, for every node of
    ``nodes`` with a condition of ``conditions`` True, a GPU whose XID within the window
    is one of ``fatal_xids``, or a GPU with a failed row remap. Series about nodes not in
    ``nodes`` are ignored; a node not named here is healthy."""
    nodes = list(nodes)
    names = [str((n.get("metadata") or {}).get("name")) for n in nodes]
    reasons: dict[str, list[str]] = {name: [] for name in names}
    for node, name in zip(nodes, names, strict=True):
        reasons[name] += condition_reasons(node, conditions)
    fatal = set(fatal_xids)
    for series in xid_series:
        value = series_value(series)
        name = series_node(series)
        if name in reasons and value is not None and int(value) in fatal:
            gpu = (series.get("metric") or {}).get("gpu", "?")
            reasons[name].append(f"GPU {gpu} XID {int(value)}")
    for series in row_remap_series:
        value = series_value(series)
        name = series_node(series)
        if name in reasons and value is not None and value > 0:
            gpu = (series.get("metric") or {}).get("gpu", "?")
            reasons[name].append(f"GPU {gpu} row remap failure")
    return {name: tuple(why) for name, why in sorted(reasons.items()) if why}
