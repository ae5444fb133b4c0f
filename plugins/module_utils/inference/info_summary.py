# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``inference_service_info``: each service's versions with their
ready/desired replicas (rule inference-replicas-reported) and traffic share as a small
table a person reads, and the A/B InferenceGraphs in a line each. Pure: the module's
result in, lines out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.table import aligned

HEADING = ("SERVICE", "READY", "VERSION", "ROLE", "REPLICAS", "MIN", "TRAFFIC")


def yes_no(value: object) -> str:
    return "yes" if value else "no"


def percent(traffic: Mapping[str, Any], version: str) -> str:
    share = traffic.get(version)
    return "-" if share is None else f"{share}%"


def version_rows(service: Mapping[str, Any]) -> list[list[str]]:
    """One row per version: the current one, then each canary; its ready/desired
    replicas and the minimum the service keeps (``-`` when not reported), its traffic."""
    replicas = service.get("replicas") or {}
    traffic = service.get("traffic") or {}
    current = service.get("current_version")
    below = set(service.get("below_minimum") or [])
    versions = [(current, "current")] + [
        (c.get("version"), "canary") for c in service.get("canaries") or []
    ]
    if service.get("mode") == "knative":  # KServe's own canary: latest and previous
        versions = [(current, "latest")]
        if "previous" in traffic:
            versions.append((service.get("previous_version"), "previous"))
        traffic = {v: traffic.get(role) for v, role in versions}
    rows = []
    # Every row names its service: a row beginning with spaces would be quoted in
    # Ansible's YAML output, out of line with the others.
    where = f"{service.get('namespace')}/{service.get('name')}"
    for version, role in versions:
        counts = replicas.get(version)
        rows.append(
            [
                where,
                yes_no(service.get("ready")),
                str(version or "-"),
                f"{role} (below minimum)" if version in below else role,
                f"{counts['ready']}/{counts['desired']}" if counts else "-",
                str(counts["minimum"]) if counts else "-",
                percent(traffic, version),
            ]
        )
    return rows


def graph_line(graph: Mapping[str, Any]) -> str:
    routes = ", ".join(
        f"{r.get('service')} {r.get('weight')}%"
        if r.get("weight") is not None
        else str(r.get("service"))
        for r in graph.get("routes") or []
    )
    return (
        f"A/B graph {graph.get('namespace')}/{graph.get('name')}: ready {yes_no(graph.get('ready'))}, "
        f"{graph.get('router') or 'router not set'} over {routes or 'no route'}"
    )


def services_summary(
    services: Sequence[Mapping[str, Any]], graphs: Sequence[Mapping[str, Any]] = ()
) -> list[str]:
    """A headline, the table (REPLICAS ready/desired, MIN what the service keeps), then
    one line per A/B graph."""
    ready = sum(1 for s in services if s.get("ready"))
    head = f"{len(services)} inference service(s), {ready} ready; REPLICAS as ready/desired"
    lines = [head if services else f"{head}: no service"]
    if services:
        rows = [list(HEADING), *(row for s in services for row in version_rows(s))]
        lines += aligned(rows, right={4, 5, 6})
    lines += [graph_line(g) for g in graphs]
    return lines


def info_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """``inference_service_info``'s ``summary`` (``kube.runner.run_module(summary=...)``)."""
    del params, check_mode  # a read: the same words in check mode
    return services_summary(result.get("services") or [], result.get("graphs") or [])
