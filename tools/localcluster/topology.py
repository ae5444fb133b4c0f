"""Fake GPU nodes of the local cluster, described by a topology file.

    name: default
    node_defaults: {gpus: 8, rdma: 1, cpu: 128, memory: 1Ti, pods: 110,
                    gpu_product: NVIDIA-H100-80GB-HBM3}
    spines:
      - name: spine-0
        tors:
          - name: tor-0
            nodes: [gpu-0, {name: gpu-1, gpus: 4, taints: [...]}]
          - name: tor-1
            nodes: {count: 2, prefix: gpu-s0-t1-}

Every node sits under exactly one ToR and every ToR under exactly one spine;
the file is rejected whole, naming the entry, before anything is started.

An optional ``cloud`` list adds public-cloud GPU nodes shaped exactly as a
Virtual Kubelet provider registers them (``cloud_node``): outside the ToR tree,

    cloud:
      - {provider: aliyun, region: cn-hangzhou, count: 2, gpus: 8, latency_ms: 35}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
LABEL_TOR = "topology.volcano.sh/tor"
LABEL_SPINE = "topology.volcano.sh/spine"
LABEL_LOCAL = "gpucloud.localcluster/fake-node"
NODE_KEYS = {"name", "gpus", "rdma", "cpu", "memory", "pods", "gpu_product", "labels", "taints"}
CLOUD_KEYS = {"provider", "region", "count", "prefix", "gpus", "latency_ms", "gpu_product"}
# What virtual-kubelet v1.14.1 puts on the node it registers (node/nodeutil: the
# default labels and the provider taint), plus the region label and the latency
# annotation the second design document asks a provider to add.
VK_LABELS = {"type": "virtual-kubelet", "kubernetes.io/role": "agent"}
VK_TAINT_KEY = "virtual-kubelet.io/provider"
REGION_LABEL = "topology.kubernetes.io/region"
LATENCY_ANNOTATION = "platform.io/idc-latency-ms"
DEFAULTS = {
    "gpus": 8,
    "rdma": 1,
    "cpu": 128,
    "memory": "1Ti",
    "pods": 110,
    "gpu_product": "NVIDIA-H100-80GB-HBM3",
}
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti|Pi)?$")


class TopologyError(ValueError):
    pass


@dataclass
class FakeNode:
    name: str
    spine: str
    tor: str
    gpus: int
    rdma: int
    cpu: str
    memory: str
    pods: int
    gpu_product: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        capacity = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": str(self.pods),
            "nvidia.com/gpu": str(self.gpus),
            "rdma/hca": str(self.rdma),
        }
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            LABEL_LOCAL: "true",
            **({LABEL_TOR: self.tor, LABEL_SPINE: self.spine} if self.tor else {}),
            "nvidia.com/gpu.product": self.gpu_product,
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": str(self.gpus),
            **self.labels,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": {KWOK_ANNOTATION: "fake", **self.annotations},
            },
            "spec": {"taints": self.taints} if self.taints else {},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }


def _err(where: str, msg: str) -> TopologyError:
    return TopologyError(f"{where}: {msg}")


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > 63:
        raise _err(
            where, f"{value!r} is not a valid name (lower-case DNS name, at most 63 characters)"
        )
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _err(where, f"{value!r} must be a whole number, 0 or more")
    return value


def _node(entry: Any, defaults: dict[str, Any], spine: str, tor: str, where: str) -> FakeNode:
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, dict):
        raise _err(where, "a node is a name or a mapping with 'name'")
    unknown = set(entry) - NODE_KEYS
    if unknown:
        raise _err(where, f"unknown keys {sorted(unknown)}; allowed: {sorted(NODE_KEYS)}")
    merged = {**defaults, **entry}
    name = _name(merged.get("name"), f"{where}.name")
    for key in ("cpu", "memory"):
        if not _QUANTITY.match(str(merged[key])):
            raise _err(f"{where}.{key}", f"{merged[key]!r} is not a non-negative quantity")
    taints = merged.get("taints") or []
    if not isinstance(taints, list) or not all(
        isinstance(t, dict) and "key" in t and "effect" in t for t in taints
    ):
        raise _err(f"{where}.taints", "each taint needs 'key' and 'effect'")
    return FakeNode(
        name=name,
        spine=spine,
        tor=tor,
        gpus=_count(merged["gpus"], f"{where}.gpus"),
        rdma=_count(merged["rdma"], f"{where}.rdma"),
        cpu=str(merged["cpu"]),
        memory=str(merged["memory"]),
        pods=_count(merged["pods"], f"{where}.pods"),
        gpu_product=str(merged["gpu_product"]),
        labels={str(k): str(v) for k, v in (merged.get("labels") or {}).items()},
        taints=taints,
    )


def cloud_node(
    name: str,
    provider: str,
    region: str,
    gpus: int = 8,
    latency_ms: int = 35,
    gpu_product: str = "NVIDIA-A100-SXM4-40GB",
) -> FakeNode:
    """A cloud GPU node as Virtual Kubelet registers it: its default labels, the provider
    taint, the declared GPU capacity, a region label and the latency annotation. No ToR:
    a cloud node is in no network performance domain of the IDC."""
    return FakeNode(
        name=name,
        spine="",
        tor="",
        gpus=gpus,
        rdma=0,
        cpu="96",
        memory="768Gi",
        pods=110,
        gpu_product=gpu_product,
        labels={**VK_LABELS, REGION_LABEL: region},
        taints=[{"key": VK_TAINT_KEY, "value": provider, "effect": "NoSchedule"}],
        annotations={LATENCY_ANNOTATION: str(latency_ms)},
    )


def _cloud(data: Any, source: str, seen: dict[str, str]) -> list[FakeNode]:
    if not isinstance(data, list):
        raise _err(f"{source}.cloud", "a list of {provider, region, count, ...}")
    out = []
    for i, entry in enumerate(data):
        where = f"{source}.cloud[{i}]"
        if not isinstance(entry, dict) or set(entry) - CLOUD_KEYS:
            raise _err(where, f"a mapping with keys from {sorted(CLOUD_KEYS)}")
        provider = _name(entry.get("provider"), f"{where}.provider")
        region = _name(entry.get("region"), f"{where}.region")
        prefix = entry.get("prefix") or f"vk-{provider}-{region}-"
        for n in range(_count(entry.get("count", 1), f"{where}.count")):
            node = cloud_node(
                _name(f"{prefix}{n}", f"{where}.prefix"),
                provider,
                region,
                _count(entry.get("gpus", 8), f"{where}.gpus"),
                _count(entry.get("latency_ms", 35), f"{where}.latency_ms"),
                str(entry.get("gpu_product", "NVIDIA-A100-SXM4-40GB")),
            )
            if node.name in seen:
                raise _err(where, f"node {node.name!r} is already in the topology")
            seen[node.name] = "cloud"
            out.append(node)
    return out


def parse(data: Any, source: str = "topology") -> list[FakeNode]:
    if not isinstance(data, dict) or not isinstance(data.get("spines"), list) or not data["spines"]:
        raise _err(source, "needs a non-empty 'spines' list")
    defaults = dict(DEFAULTS)
    extra = data.get("node_defaults") or {}
    if not isinstance(extra, dict) or set(extra) - (NODE_KEYS - {"name"}):
        raise _err(f"{source}.node_defaults", f"allowed keys: {sorted(NODE_KEYS - {'name'})}")
    defaults.update(extra)
    nodes: list[FakeNode] = []
    seen_nodes: dict[str, str] = {}
    seen_tors: dict[str, str] = {}
    seen_spines: set[str] = set()
    for si, spine in enumerate(data["spines"]):
        swhere = f"{source}.spines[{si}]"
        if not isinstance(spine, dict):
            raise _err(swhere, "a spine is a mapping with 'name' and 'tors'")
        sname = _name(spine.get("name"), f"{swhere}.name")
        if sname in seen_spines:
            raise _err(swhere, f"spine {sname!r} is listed twice")
        seen_spines.add(sname)
        for ti, tor in enumerate(spine.get("tors") or []):
            twhere = f"{swhere}.tors[{ti}]"
            if not isinstance(tor, dict):
                raise _err(twhere, "a ToR is a mapping with 'name' and 'nodes'")
            tname = _name(tor.get("name"), f"{twhere}.name")
            if tname in seen_tors:
                raise _err(
                    twhere,
                    f"ToR {tname!r} is already under spine {seen_tors[tname]!r}; a ToR has one spine",
                )
            seen_tors[tname] = sname
            entries = tor.get("nodes") or []
            if isinstance(entries, dict):
                count = _count(entries.get("count"), f"{twhere}.nodes.count")
                prefix = entries.get("prefix") or f"{tname}-node-"
                template = {k: v for k, v in entries.items() if k not in ("count", "prefix")}
                entries = [{**template, "name": f"{prefix}{i}"} for i in range(count)]
            for ni, entry in enumerate(entries):
                node = _node(entry, defaults, sname, tname, f"{twhere}.nodes[{ni}]")
                if node.name in seen_nodes:
                    raise _err(
                        f"{twhere}.nodes[{ni}]",
                        f"node {node.name!r} is already under ToR {seen_nodes[node.name]!r}; a node has one ToR",
                    )
                seen_nodes[node.name] = tname
                nodes.append(node)
    if data.get("cloud"):
        nodes += _cloud(data["cloud"], source, seen_nodes)
    if not nodes:
        raise _err(source, "describes no nodes")
    return nodes


def load(path: Path) -> list[FakeNode]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise TopologyError(f"{path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"{path}: not valid YAML ({exc})") from None
    return parse(data, str(path))
