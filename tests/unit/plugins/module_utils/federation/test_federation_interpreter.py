# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule federation-job-replicas (federation/interpreter, federation/volcano_job_lua).

The Lua runs here in Lua 5.1 through lupa (Karmada runs it in gopher-lua, a Lua 5.1),
with a stand-in for Karmada's ``kube`` library: ``accuratePodRequirements`` as
``helper.GenerateReplicaRequirements`` computes it for the templates below (the requests
of the containers summed, the largest init container's, the node selector and
tolerations), ``getResourceQuantity`` as a number. Without lupa those tests are skipped
and only the object's structure is checked."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import parse
from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
    interpreter,
    volcano_job_lua,
)

GPU = "nvidia.com/gpu"


def test_the_customization_object():
    ric = interpreter.volcano_job_customization()
    assert ric["apiVersion"] == "config.karmada.io/v1alpha1"
    assert ric["kind"] == "ResourceInterpreterCustomization"
    assert ric["spec"]["target"] == {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}
    # Only what the built-in customization lacks: health and status stay Karmada's own.
    assert set(ric["spec"]["customizations"]) == {"replicaResource", "replicaRevision"}
    rules = ric["spec"]["customizations"]
    assert "function GetReplicas(desiredObj)" in rules["replicaResource"]["luaScript"]
    assert (
        "function ReviseReplica(desiredObj, desiredReplica)"
        in (rules["replicaRevision"]["luaScript"])
    )
    assert ric["metadata"]["labels"] == {"platform.io/managed-by": "gpucloud-platform"}


def test_the_lua_keeps_to_lua_5_1():
    # gopher-lua is Lua 5.1: no integer division, bit operators or goto.
    for script in (volcano_job_lua.GET_REPLICAS, volcano_job_lua.REVISE_REPLICA):
        assert "//" not in script and "goto" not in script and "&" not in script


lupa = pytest.importorskip("lupa")
lua51 = pytest.importorskip("lupa.lua51")


def _requests(container: dict[str, Any]) -> dict[str, Decimal]:
    raw = (container.get("resources") or {}).get("requests") or {}
    return {k: parse(v, k) for k, v in raw.items()}


def pod_requirements(template: dict[str, Any]) -> dict[str, Any] | None:
    spec = template.get("spec") or {}
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        for k, v in _requests(c).items():
            total[k] = total.get(k, Decimal(0)) + v
    for c in spec.get("initContainers") or []:
        for k, v in _requests(c).items():
            total[k] = max(total.get(k, Decimal(0)), v)
    claim = {}
    if spec.get("nodeSelector"):
        claim["nodeSelector"] = spec["nodeSelector"]
    if spec.get("tolerations"):
        claim["tolerations"] = spec["tolerations"]
    if not total and not claim:
        return None
    out: dict[str, Any] = {"resourceRequest": {k: str(v) for k, v in total.items()}}
    if claim:
        out["nodeClaim"] = claim
    return out


class Karmada:
    """The two scripts, each in a state of its own, as Karmada's VM runs them."""

    def __init__(self) -> None:
        self.replicas = self._state(volcano_job_lua.GET_REPLICAS)
        self.revise = self._state(volcano_job_lua.REVISE_REPLICA)

    def _state(self, script: str) -> Any:
        lua = lua51.LuaRuntime(unpack_returned_tuples=True)

        def accurate(template):
            return self._to_lua(lua, pod_requirements(self.from_lua(template)))

        def quantity(q):
            return float(parse(q, "q"))

        kube = lua.table_from(
            {"accuratePodRequirements": accurate, "getResourceQuantity": quantity}
        )
        lua.globals().package.preload["kube"] = lua.eval(
            "function(k) return function() return k end end"
        )(kube)
        lua.execute(script)
        return lua

    @staticmethod
    def _to_lua(lua: Any, value: Any) -> Any:
        if value is None:
            return None
        return lua.table_from(value, recursive=True)

    @classmethod
    def from_lua(cls, value: Any) -> Any:
        if lua51.lua_type(value) != "table":
            return value
        keys = list(value.keys())
        if keys and all(isinstance(k, int) for k in keys):
            return [cls.from_lua(value[k]) for k in sorted(keys)]
        return {k: cls.from_lua(v) for k, v in value.items()}

    def get_replicas(self, job: dict[str, Any]) -> tuple[int, Any]:
        fn = self.replicas.globals().GetReplicas
        replicas, requirement = fn(self._to_lua(self.replicas, job))
        return replicas, self.from_lua(requirement)

    def revise_replica(self, job: dict[str, Any], desired: int) -> Any:
        fn = self.revise.globals().ReviseReplica
        return self.from_lua(fn(self._to_lua(self.revise, job), desired))


def amounts(resources):
    return {k: parse(v, k) for k, v in resources.items()}


def task(name, replicas, requests, **spec):
    template = {
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}
    }
    out = {"name": name, "template": template}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def job(*tasks):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "tenant-alpha"},
        "spec": {"minAvailable": 3, "queue": "tenant-alpha-payg", "tasks": list(tasks)},
    }


@pytest.fixture(scope="module")
def karmada():
    return Karmada()


def test_one_task(karmada):
    replicas, req = karmada.get_replicas(job(task("w", 4, {"cpu": "8", GPU: "8"})))
    assert replicas == 4
    assert amounts(req["resourceRequest"]) == amounts({"cpu": "8", GPU: "8"})


def test_tasks_of_different_shapes_take_the_largest_of_each(karmada):
    tolerations = [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}]
    launcher = task("launcher", 1, {"cpu": "16", "memory": "64Gi"}, tolerations=tolerations)
    workers = task("worker", 4, {"cpu": "8", "memory": "32Gi", GPU: "8"}, tolerations=tolerations)
    replicas, req = karmada.get_replicas(job(launcher, workers))
    assert replicas == 5
    assert amounts(req["resourceRequest"]) == amounts({"cpu": "16", "memory": "64Gi", GPU: "8"})
    assert req["nodeClaim"] == {"tolerations": tolerations}


def test_a_task_without_pods_adds_neither_pods_nor_shape(karmada):
    idle = task("idle", 0, {"cpu": "64", GPU: "16"})
    missing = task("missing", None, {"cpu": "64"})
    replicas, req = karmada.get_replicas(job(task("w", 2, {GPU: "1"}), idle, missing))
    assert replicas == 2
    assert amounts(req["resourceRequest"]) == amounts({GPU: "1"})


def test_a_job_that_asks_for_nothing_has_no_requirement(karmada):
    empty = {"name": "e", "replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}
    assert karmada.get_replicas(job(empty)) == (3, None)
    assert karmada.get_replicas(job()) == (0, None)


def test_the_revision_leaves_a_job_that_lands_whole_unchanged(karmada):
    whole = job(task("launcher", 1, {"cpu": "1"}), task("worker", 4, {GPU: "8"}))
    assert karmada.revise_replica(whole, 5) == whole


@pytest.mark.parametrize("desired", [0, 1, 4, 6])
def test_the_revision_refuses_a_gang_cut_in_parts(karmada, desired):
    whole = job(task("launcher", 1, {"cpu": "1"}), task("worker", 4, {GPU: "8"}))
    with pytest.raises(lua51.LuaError, match=f"{desired} of its 5 pods"):
        karmada.revise_replica(whole, desired)


shapes = st.dictionaries(
    st.sampled_from(["cpu", "memory", GPU]),
    st.integers(1, 64).map(str),
    min_size=1,
)


@given(tasks=st.lists(st.tuples(st.integers(0, 8), shapes), min_size=1, max_size=4))
def test_the_requirement_holds_every_pod_and_the_count_every_pod(tasks):
    karmada = Karmada()
    spec = [task(f"t{i}", n, shape) for i, (n, shape) in enumerate(tasks)]
    replicas, req = karmada.get_replicas(job(*spec))
    assert replicas == sum(n for n, _shape in tasks)
    pods = [shape for n, shape in tasks if n > 0]
    if not pods:
        assert req is None
        return
    largest = req["resourceRequest"]
    for shape in pods:
        for name, value in shape.items():
            assert parse(largest[name], name) >= parse(value, name)
    # Conservative: replicas x requirement is at least the gang's sum.
    for name in largest:
        gang = sum(parse(s.get(name, "0"), name) * n for n, s in tasks if n > 0)
        assert parse(largest[name], name) * replicas >= gang
