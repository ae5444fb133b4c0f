# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which domain imports which (``from ..<domain>`` in ``plugins/module_utils/<domain>/``):
no circle between domains.

The domains that share the GPU pool and job demand are layered (docs/development.md,
"Arrows between domains"): ``workload`` (the pool, rule job-demand) at the bottom, then
``queues``, ``policy``, ``hybrid``, ``jobs``, ``spot`` and ``capacity`` (PAYG growth
reclaims spot jobs). Each imports only the ones below it; the names they all use (the
vGPU resources, the SLA annotations) are ``common/names``'.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"

# Bottom up: a domain of this list imports only the ones before it.
LAYERS = ("workload", "queues", "policy", "hybrid", "jobs", "spot", "capacity", "gpu_health")


def domain_arrows() -> dict[tuple[str, str], set[str]]:
    """(from domain, to domain) -> the files that import across."""
    arrows: dict[tuple[str, str], set[str]] = {}
    for path in sorted(MODULE_UTILS.glob("*/*.py")):
        domain = path.parent.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
                other = node.module.split(".")[0]
                if other != domain:
                    arrows.setdefault((domain, other), set()).add(path.name)
    return arrows


def circles(arrows: Iterable[tuple[str, str]]) -> list[set[str]]:
    """The strongly connected groups of two or more domains (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in arrows:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def circle_arrows(arrows: dict[tuple[str, str], set[str]]) -> set[tuple[str, str]]:
    inside = set()
    for group in circles(arrows):
        inside |= {(a, b) for a, b in arrows if a in group and b in group}
    return inside


def test_the_import_graph_is_read():
    arrows = domain_arrows()
    assert ("tenants", "queues") in arrows and len(arrows) > 40


def test_no_circle_between_domains():
    arrows = domain_arrows()
    inside = sorted(circle_arrows(arrows))
    assert not inside, "circle between domains: " + "; ".join(
        f"{a} -> {b} ({', '.join(sorted(arrows[(a, b)]))})" for a, b in inside
    )


def test_the_layered_domains_import_only_downward():
    upward = sorted(
        (a, b)
        for a, b in domain_arrows()
        if a in LAYERS and b in LAYERS and LAYERS.index(b) > LAYERS.index(a)
    )
    assert not upward, f"arrows up the layers {LAYERS}: {upward}"


def test_the_pool_and_job_demand_import_no_other_domain():
    assert {b for a, b in domain_arrows() if a == "workload"} <= {"common"}


def test_tenants_and_catalog_are_no_circle():
    # The catalog builds on tenants (it renders and writes tenants); tenants never
    # import the catalog.
    assert ("tenants", "catalog") not in domain_arrows()


def test_a_circle_is_found_when_there_is_one():
    assert circles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [{"a", "b", "c"}]
    assert circles([("a", "b"), ("b", "c")]) == []
