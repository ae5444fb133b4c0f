# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which domain imports which (``from ..<domain>`` in ``plugins/module_utils/<domain>/``):
no new circle between domains.

One circle is left and written down here, arrow by arrow, with why each arrow exists
(docs/development.md, "Arrows between domains"): the pool and job demand sit below spot,
PAYG and jobs but live in ``capacity`` and ``jobs``. The names several domains share (the
vGPU resources, the SLA annotations) are ``common/names``'. An
arrow may leave this list (the test then says to remove it); none may join it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"

# The arrows inside the one circle left, and why each is there.
KNOWN_CIRCLE = {
    ("spot", "jobs"): "a spot job's GPUs are rule job-demand's (jobs/demand)",
    ("spot", "capacity"): "the spot pool is capacity/pool's",
    ("jobs", "capacity"): "feasibility reads the pool (capacity/pool)",
    ("capacity", "spot"): "PAYG growth and a sale reclaim spot jobs (spot/reclaim)",
    ("capacity", "jobs"): "the pool counts pods and PAYG counts jobs by rule job-demand",
}


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


def test_no_new_arrow_joins_a_circle_between_domains():
    arrows = domain_arrows()
    new = sorted(circle_arrows(arrows) - set(KNOWN_CIRCLE))
    assert not new, "new circle between domains: " + "; ".join(
        f"{a} -> {b} ({', '.join(sorted(arrows[(a, b)]))})" for a, b in new
    )


def test_an_arrow_that_left_the_circle_leaves_the_list():
    gone = sorted(set(KNOWN_CIRCLE) - circle_arrows(domain_arrows()))
    assert not gone, f"no longer in a circle, remove from KNOWN_CIRCLE: {gone}"


def test_tenants_and_catalog_are_no_circle():
    # The catalog builds on tenants (it renders and writes tenants); tenants never
    # import the catalog.
    assert ("tenants", "catalog") not in domain_arrows()


def test_a_circle_is_found_when_there_is_one():
    assert circles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [{"a", "b", "c"}]
    assert circles([("a", "b"), ("b", "c")]) == []
