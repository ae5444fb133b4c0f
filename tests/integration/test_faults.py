# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Faults on the local cluster: the API server stopped before a run, and in the
middle of one (``tools/localcluster/cluster.py stop kube-apiserver``).

* With the API server down, every module fails with one clear line ("cannot reach
  the Kubernetes API server"), ``changed: false``, and no traceback.
* A spot recompute over 300 spot queues and a tenant with 150 teams, each stopped
  part-way, fail with ``changed: true`` and ``done`` naming exactly the writes that
  were made, and say that running again finishes the change. After ``up`` one run
  finishes it and the next changes nothing.

Skipped against another cluster (``GPUCLOUD_KUBECONFIG``): it stops the API server.
"""

from __future__ import annotations

import os
import uuid

import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    DEFAULT_WORKERS,
    retry_while_denied,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    managed_queue,
    remove_tenants,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_check_mode import MODULES

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(os.environ.get("GPUCLOUD_KUBECONFIG")), reason="stops the local API server"
    ),
]

GPU = "nvidia.com/gpu"
VOLCANO = ("scheduling.volcano.sh", "v1beta1", "queues")
RESUME = "every write is idempotent, so running again finishes the change"
UNREACHABLE = "cannot reach the Kubernetes API server"


# Modules that run on a managed host and never talk to the cluster.
HOST_MODULES = {"gpu_node_probe"}


def test_every_module_says_the_api_server_cannot_be_reached(api_server, run_module):
    from concurrent.futures import ThreadPoolExecutor

    api_server.stop()
    # Each run is its own ansible process; two at a time keep both cores busy.
    with ThreadPoolExecutor(max_workers=2) as pool:
        outs = dict(
            zip(MODULES, pool.map(lambda m: run_module(m, MODULES[m][0]), MODULES), strict=True)
        )
    for module, out in outs.items():
        if module in HOST_MODULES:
            # It runs on a GPU host and never asks the API server: it goes on regardless.
            assert not out.get("failed") and out["changed"] is False, (module, out)
            continue
        assert out.get("failed") is True, (module, out)
        assert out["msg"].startswith(UNREACHABLE), (module, out["msg"])
        assert out["changed"] is False, module
        # One line naming the server, not a module crash ("MODULE FAILURE", a traceback).
        assert "\n" not in out["msg"] and "Traceback" not in out["msg"], (module, out["msg"])


@pytest.mark.parametrize("module", ["tenant_info", "k8s_objects"])
def test_a_server_never_reached_is_said_in_one_line(module, tmp_path):
    """A kubeconfig naming a port where nothing listens (a mistyped port): no discovery
    cache names the server, so making the client asks it its version, and that fails
    before any request of the module's own. Both ways a module connects (the runner's,
    and k8s_objects' through kubernetes.core's service) say it as every module does."""
    from ansible_collections.gpucloud.platform.tests.integration.conftest import (
        ansible_environment,
        run_module_in,
    )

    kubeconfig = tmp_path / "mistyped.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    out = run_module_in(ansible_environment(str(kubeconfig)), module, MODULES[module][0])
    assert out.get("failed") is True and out["changed"] is False, out
    assert out["msg"].startswith(UNREACHABLE), out["msg"]
    assert "127.0.0.1" in out["msg"] and "\n" not in out["msg"], out["msg"]
    assert "Traceback" not in out["msg"] and "MODULE FAILURE" not in out["msg"], out["msg"]


@pytest.fixture
def spot_queues(api_client):
    """300 managed spot queues of tenants without a subscription: each one's capability
    changes on the next recompute (0 GPUs plus the cpu and memory floor)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api_client)
    prefix = f"flt{uuid.uuid4().hex[:5]}"
    names = [f"tenant-{prefix}{i:03d}-spot" for i in range(300)]
    for i, name in enumerate(names):
        custom.create_cluster_custom_object(
            *VOLCANO, managed_queue(name, f"{prefix}{i:03d}", "spot")
        )
    yield names
    for name in names:
        try:
            # Volcano's queue webhook judges from its informer cache, which is rebuilt
            # after the API server came back: it may deny for a moment.
            retry_while_denied(
                lambda name=name: custom.delete_cluster_custom_object(*VOLCANO, name)
            )
        except ApiException as exc:
            if exc.status != 404:
                raise


def when_written(custom, names: list[str], count: int, timeout: float, then) -> None:
    """Call ``then`` as soon as ``count`` of the queues carry the recompute's floor. Read
    from a watch, not a poll: one LIST of hundreds of queues can take longer than the
    recompute needs for all its remaining writes, and the stop must land in the middle."""
    from kubernetes import watch

    wanted, written = set(names), set()
    stream = watch.Watch()
    for event in stream.stream(
        custom.list_cluster_custom_object,
        *VOLCANO,
        label_selector="platform.io/queue-type=spot",
        timeout_seconds=int(timeout),
    ):
        queue = event["object"]
        name = queue["metadata"]["name"]
        if name in wanted and "cpu" in (queue["spec"].get("capability") or {}):
            written.add(name)
            if len(written) >= count:
                then()
                stream.stop()
                return
    pytest.fail(f"{len(written)} of {count} queues written in {timeout} s")


def floored(custom, names: list[str]) -> set[str]:
    """The queues the recompute has written (they carry a cpu capability now)."""
    items = custom.list_cluster_custom_object(
        *VOLCANO, label_selector="platform.io/queue-type=spot"
    )["items"]
    wanted = set(names)
    return {
        q["metadata"]["name"]
        for q in items
        if q["metadata"]["name"] in wanted and "cpu" in (q["spec"].get("capability") or {})
    }


def test_a_spot_recompute_cut_off_part_way_names_what_it_wrote(
    api_client, api_server, spot_queues, start_module, run_module
):
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    finish = start_module("spot_capacity", {})
    try:
        when_written(custom, spot_queues, 20, 120, api_server.stop)
        out = finish()
    finally:
        # Before the fixture deletes the queues.
        if api_server.stopped:
            api_server.restore()

    assert out.get("failed") is True and out["changed"] is True, out.get("msg")
    assert out["msg"].startswith(
        f"updating spot queues failed after {len(out['done'])} change(s): "
    )
    assert UNREACHABLE in out["msg"] and out["msg"].endswith(RESUME)
    done = set(out["done"]) & set(spot_queues)
    assert 20 <= len(done) < len(spot_queues)

    written = floored(custom, spot_queues)
    # Every write reported was made; at most the ones in flight when the server died
    # (one per worker: the queues are written DEFAULT_WORKERS at a time) landed
    # without an answer.
    assert done <= written and len(written - done) <= DEFAULT_WORKERS

    again = run_module("spot_capacity", {})
    assert again["changed"] is True and set(spot_queues) - written <= set(again["updated"])
    assert floored(custom, spot_queues) == set(spot_queues)
    assert run_module("spot_capacity", {})["changed"] is False


def test_a_tenant_cut_off_part_way_names_what_it_wrote(
    api_client, api_server, start_module, run_module
):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    name = f"flt{uuid.uuid4().hex[:5]}"
    # Enough teams that the writes are still going when the API server stops (40 were
    # once all written first on a fast run).
    teams = [{"name": f"t{i:03d}", "deserved": {GPU: 0}} for i in range(150)]
    args = {
        "name": name,
        "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"},
        "teams": teams,
        "oversell_check": False,
    }

    def namespace_exists() -> bool:
        try:
            core.read_namespace(f"tenant-{name}")
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    finish = start_module("tenant", args)
    try:
        wait_until(namespace_exists, 120, 0.05, "the tenant's namespace")
        api_server.stop()
        out = finish()

        assert out.get("failed") is True and out["changed"] is True, out.get("msg")
        assert out["done"] and out["msg"].endswith(RESUME)
        assert UNREACHABLE in out["msg"]
        assert any(f"tenant-{name}" in entry for entry in out["done"])

        api_server.restore()
        finished = run_module("tenant", args)
        assert not finished.get("failed"), finished.get("msg")
        assert finished["changed"] is True
        queues = custom.list_cluster_custom_object(
            *VOLCANO, label_selector=f"platform.io/tenant={name}"
        )["items"]
        assert {f"tenant-{name}-{t['name']}" for t in teams} <= {
            q["metadata"]["name"] for q in queues
        }
        assert run_module("tenant", args)["changed"] is False
    finally:
        if api_server.stopped:
            api_server.restore()
        remove_tenants(run_module, api_client, [name])


def first_version_of(custom, name: str, on_first) -> dict:
    """Watch for queue ``name`` and return the object as its creating write left it,
    calling ``on_first`` at once (the API server is stopped there)."""
    from kubernetes import watch

    stream = watch.Watch()
    for event in stream.stream(
        custom.list_cluster_custom_object,
        *VOLCANO,
        field_selector=f"metadata.name={name}",
        timeout_seconds=120,
    ):
        if event["type"] == "ADDED":
            on_first()
            stream.stop()
            return event["object"]
    raise AssertionError(f"queue {name} was never created")


def test_a_tenant_stopped_between_the_writes_of_a_queue_is_finished_by_the_next_run(
    api_client, api_server, start_module, run_module
):
    """Rule queue-created-whole: the API server is stopped the moment a new tenant's spot
    queue appears (150 teams follow it, so the run is cut off). The queue already carries
    its tenant's labels and its limit, and the next run finishes the tenant (it once refused
    it for good: "belongs to no tenant")."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    name = f"flt{uuid.uuid4().hex[:5]}"
    args = {
        "name": name,
        "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"},
        "payg": {GPU: 0},
        "teams": [{"name": f"t{i:03d}", "deserved": {GPU: 0}} for i in range(150)],
        "oversell_check": False,
    }
    try:
        finish = start_module("tenant", args)
        first = first_version_of(custom, f"tenant-{name}-spot", api_server.stop)
        out = finish()
        assert out.get("failed") is True and UNREACHABLE in out["msg"], out.get("msg")
        labels = first["metadata"].get("labels") or {}
        assert labels.get("platform.io/tenant") == name, first["metadata"]
        assert labels.get("platform.io/queue-type") == "spot"
        assert "capability" in first["spec"] and first["spec"].get("parent") == "root"

        api_server.restore()
        finished = run_module("tenant", args)
        assert not finished.get("failed"), finished.get("msg")
        queues = custom.list_cluster_custom_object(
            *VOLCANO, label_selector=f"platform.io/tenant={name}"
        )["items"]
        assert {q["metadata"]["name"] for q in queues} == {
            f"tenant-{name}-subscription",
            f"tenant-{name}-payg",
            f"tenant-{name}-spot",
            *(f"tenant-{name}-{t['name']}" for t in args["teams"]),
        }
        assert run_module("tenant", args)["changed"] is False
    finally:
        if api_server.stopped:
            api_server.restore()
        remove_tenants(run_module, api_client, [name])


def test_a_queue_an_earlier_run_left_unlabelled_is_adopted(api_client, run_module):
    """Rule queue-adopted: a spot queue as an interrupted run of an earlier release left
    it (its capacity written by the platform's capacity field manager, no labels yet) is
    the tenant's: the run labels it and finishes, where it once refused the tenant."""
    from kubernetes import client, dynamic

    custom = client.CustomObjectsApi(api_client)
    name = f"adp{uuid.uuid4().hex[:5]}"
    spot = f"tenant-{name}-spot"
    part_way = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": spot},
        "spec": {"capability": {GPU: 0}},
    }
    dyn = dynamic.DynamicClient(api_client)
    dyn.server_side_apply(
        dyn.resources.get(api_version="scheduling.volcano.sh/v1beta1", kind="Queue"),
        body=part_way,
        name=spot,
        field_manager="gpucloud-platform-capacity",
        force_conflicts=True,
    )
    args = {"name": name, "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"}}
    try:
        out = run_module("tenant", args)
        assert not out.get("failed"), out.get("msg")
        live = custom.get_cluster_custom_object(*VOLCANO, spot)
        assert live["metadata"]["labels"]["platform.io/tenant"] == name
        managers = {e["manager"] for e in live["metadata"]["managedFields"]}
        assert "gpucloud-platform" in managers
        assert run_module("tenant", args)["changed"] is False
    finally:
        remove_tenants(run_module, api_client, [name])
