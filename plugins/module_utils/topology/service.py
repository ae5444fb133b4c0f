# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The topology domain against the cluster: the sync, the read-out and one HyperNode.

The one file of the domain that reads and writes; every decision is one of the
pure functions of ``discovery``, ``plan``, ``manifests`` and ``view``:

* ``SYNC_FLOW`` (module ``topology``, through ``kube.flow``): ``gather_sync`` lists the
  Nodes and the HyperNodes, ``apply_sync`` makes the plan's writes in its order (the
  plan is ``topology/sync``'s);
* ``INFO_FLOW`` (module ``topology_info``, through ``kube.flow``; its pure steps are
  ``topology/info``): one list of Nodes (and of HyperNodes for the cluster's own tree);
  it changes nothing;
* ``RENDER_FLOW`` (module ``topology_render``, through ``kube.flow``; its pure steps are
  ``topology/renderings``): the same reads, then the renderings written as files on the
  host the module runs on;
* ``HYPERNODE_FLOW`` (module ``hypernode``, through ``kube.flow``; its pure steps are
  ``topology/hypernode``): one list of HyperNodes (and of Nodes when a leaf selects by
  pattern or label), then one write.

Check mode never writes for real: applies go to the API server as dry runs
(the cluster does that), and deletes, which the API server is not asked to dry
run, are skipped and reported as what would be deleted. Files are compared,
not written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import PartialWrite
from ..common.names import HYPERNODE_API
from ..kube.cluster import ApiException, Cluster, TransportError, written_or_raise
from ..kube.flow import Flow
from .hypernode import HyperNodeFacts, HyperNodeRequest, parse_hypernode
from .hypernode import empty_facts as empty_hypernode_facts
from .hypernode import facts_in as hypernode_facts_in
from .hypernode import facts_out as hypernode_facts_out
from .hypernode import plan as plan_one
from .hypernode import report as report_hypernode
from .info import parse_info, plan_info, report_info
from .plan import HyperNodeChange, SyncPlan, plan_hypernode
from .renderings import (
    Rendering,
    RenderPlanned,
    RenderRequest,
    parse_render,
    plan_render,
    report_render,
)
from .renderings import empty_facts as empty_render_facts
from .sync import (
    SyncFacts,
    SyncPlanned,
    SyncRequest,
    empty_facts,
    facts_in,
    facts_out,
    node_fact,
    parse_sync,
    plan_run,
    report,
)
from .tree import KIND
from .view import TopologyView, ViewRequest

NO_GRAPHVIZ = (
    "Graphviz 'dot' is not installed on this host; no PNG was written (install graphviz to get one)"
)


# --- topology: the whole tree -----------------------------------------------------


def gather_sync(request: SyncRequest, cluster: Cluster) -> SyncFacts:
    """One list of Nodes (by ``node_selector``) and one of HyperNodes."""
    nodes = cluster.list("v1", "Node", label_selector=request.node_selector)
    return SyncFacts(
        nodes=tuple(node_fact(n) for n in nodes),
        hypernodes=tuple(cluster.list(HYPERNODE_API, KIND)),
    )


def apply_sync(
    request: SyncRequest, planned: SyncPlanned, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The plan's writes; the result is what the plan says."""
    result = report(request, planned)
    said = {k: v for k, v in result.items() if k not in ("changed", "diff")}
    write_sync(cluster, planned.plan, check_mode, said)
    return result


# Module topology: make the cluster's HyperNodes equal the tree the options describe.
SYNC_FLOW: Flow[SyncRequest, SyncFacts, SyncPlanned] = Flow(
    parse=parse_sync,
    gather=gather_sync,
    plan=plan_run,
    apply=apply_sync,
    report=report,
    empty=empty_facts,
    facts_out=facts_out,
    facts_in=facts_in,
)


def write_sync(
    cluster: Cluster, plan: SyncPlan, check_mode: bool, report: Mapping[str, Any]
) -> list[str]:
    """The plan's writes in its order; raises ``PartialWrite`` with ``report`` when
    one fails. In check mode the deletions are only reported (``deleted``)."""
    # Creates and updates side by side (a HyperNode names its members, it does not need
    # them to exist first); deletes after them, one at a time.
    writes = [*plan.create, *(desired for desired, _live in plan.update)]
    labels = [
        *("created " + m["metadata"]["name"] for m in plan.create),
        *("updated " + desired["metadata"]["name"] for desired, _live in plan.update),
    ]
    done = written_or_raise(labels, cluster.apply_all(writes), "writing HyperNodes", **report)
    try:
        # The API server is not asked to dry run a delete: in check mode none is sent.
        for obj in [] if check_mode else plan.delete:
            cluster.delete(HYPERNODE_API, KIND, obj["metadata"]["name"])
            done.append("deleted " + obj["metadata"]["name"])
    except (ApiException, TransportError) as exc:
        raise PartialWrite("writing HyperNodes", done, exc, **report) from exc
    return done


# --- hypernode: one HyperNode -----------------------------------------------------


def gather_hypernode(request: HyperNodeRequest, cluster: Cluster) -> HyperNodeFacts:
    """One list of HyperNodes, and one of Nodes only when a leaf, before or after the
    change, selects Nodes by pattern or label."""
    live = tuple(cluster.list(HYPERNODE_API, KIND))
    needs_nodes = plan_hypernode(request.name, request.desired, live).needs_nodes
    nodes = tuple(node_fact(n) for n in cluster.list("v1", "Node")) if needs_nodes else None
    return HyperNodeFacts(live, nodes)


def apply_hypernode(
    request: HyperNodeRequest, change: HyperNodeChange, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The one write; ``hypernode`` is the API server's answer (its dry run in check mode)."""
    result = report_hypernode(request, change)
    if change.action == "deleted":
        if not check_mode:  # the API server is not asked to dry run a delete
            cluster.delete(HYPERNODE_API, KIND, change.name)
    elif change.action != "none":
        result["hypernode"] = cluster.apply(change.desired)  # a dry run in check mode
    return result


# Module hypernode: one HyperNode present or absent, refusing what it would break.
HYPERNODE_FLOW: Flow[HyperNodeRequest, HyperNodeFacts, HyperNodeChange] = Flow(
    parse=parse_hypernode,
    gather=gather_hypernode,
    plan=plan_one,
    apply=apply_hypernode,
    report=report_hypernode,
    empty=empty_hypernode_facts,
    facts_out=hypernode_facts_out,
    facts_in=hypernode_facts_in,
)


# --- topology_info and topology_render: the tree, shown ---------------------------------------------


def gather_info(request: ViewRequest, cluster: Cluster) -> SyncFacts:
    """One list of Nodes (by ``node_selector``) and, for the cluster's own tree, one of
    HyperNodes."""
    nodes = cluster.list("v1", "Node", label_selector=request.node_selector)
    live = cluster.list(HYPERNODE_API, KIND) if request.source == "cluster" else []
    return SyncFacts(nodes=tuple(node_fact(n) for n in nodes), hypernodes=tuple(live))


def apply_info(
    request: ViewRequest, view: TopologyView, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Nothing to write: the tree as data and renderings."""
    return {"changed": False, **report_info(request, view)}


# Module topology_info: the tree as data and renderings; it changes nothing.
INFO_FLOW: Flow[ViewRequest, SyncFacts, TopologyView] = Flow(
    parse=parse_info,
    gather=gather_info,
    plan=plan_info,
    apply=apply_info,
    report=report_info,
    facts_out=facts_out,
    facts_in=facts_in,
)


def gather_render(request: RenderRequest, cluster: Cluster) -> SyncFacts:
    """``topology_info``'s reads, for the tree the renderings show."""
    return gather_info(request.view, cluster)


def apply_render(
    request: RenderRequest, planned: RenderPlanned, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The renderings as files in ``dest``, each written only when its content changes
    (in check mode, only compared); nothing is written to the cluster."""
    report = planned.report
    written = Written()
    try:
        write_renderings(request.dest, planned.files, check_mode, written)
    except (OSError, GraphvizError) as exc:
        raise PartialWrite(
            "writing the topology renderings", written.done, exc, **report, files=written.files
        ) from exc
    return {"changed": bool(written.done), **report, "files": written.files}


# Module topology_render: the tree's renderings as files on the host; the cluster is only read.
RENDER_FLOW: Flow[RenderRequest, SyncFacts, RenderPlanned] = Flow(
    parse=parse_render,
    gather=gather_render,
    plan=plan_render,
    apply=apply_render,
    report=report_render,
    empty=empty_render_facts,
    facts_out=facts_out,
    facts_in=facts_in,
)


class GraphvizError(Exception):
    """Graphviz's ``dot`` ran and failed."""


@dataclass
class Written:
    """The renderings' files: every path, and those (in check mode, that would be) written."""

    files: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)

    def add(self, path: str, changed: bool) -> None:
        self.files.append(path)
        if changed:
            self.done.append(path)


def write_renderings(
    dest: str, files: Sequence[Rendering], check_mode: bool, written: Written
) -> None:
    """Write the planned renderings into ``dest``, each only when its content changes.
    The PNG needs Graphviz's ``dot``; without it a warning is given and the other files
    are still written."""
    if not os.path.isdir(dest) and not check_mode:
        os.makedirs(dest, exist_ok=True)
    for rendering in (f for f in files if f.fmt != "png"):
        written.add(rendering.path, write_file(rendering.path, rendering.text.encode(), check_mode))
    png = next((f for f in files if f.fmt == "png"), None)
    if png is None:
        return
    dot_bin = shutil.which("dot")
    if not dot_bin:
        warn(NO_GRAPHVIZ)
        return
    written.files.append(png.path)  # named in a failure too
    drawn = graphviz_png(dot_bin, png.text)
    if write_file(png.path, drawn, check_mode):
        written.done.append(png.path)


def graphviz_png(dot_bin: str, source: str) -> bytes:
    """The PNG Graphviz's ``dot`` draws of a DOT digraph."""
    proc = subprocess.run(
        [dot_bin, "-Tpng"], input=source.encode(), capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise GraphvizError(f"Graphviz dot failed (rc {proc.returncode}): {proc.stderr!r}")
    return proc.stdout


def write_file(path: str, content: bytes, check_mode: bool) -> bool:
    """Write ``content`` to ``path`` atomically; False when it already holds it.
    In check mode only compares."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == content:
                return False
    if check_mode:
        return True
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".topology-")
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True
