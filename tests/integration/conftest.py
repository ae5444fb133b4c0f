# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for tests against the local cluster (tools/localcluster).

The session starts the cluster with ``cluster.py up`` (a no-op when it is
already running) and hands tests its admin kubeconfig. Set
``GPUCLOUD_KUBECONFIG`` to test against another cluster instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    ROOT,
    WATCHERS,
    cluster_tool,
    state_dir,
    volcano_webhook_serves,
    wait_until,
)


@pytest.fixture(scope="session")
def localcluster() -> str:
    """Start (or reuse) the local cluster; returns its admin kubeconfig path."""
    override = os.environ.get("GPUCLOUD_KUBECONFIG")
    if override:
        return override
    proc = subprocess.run(
        [sys.executable, str(CLUSTER), "up"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"the local cluster did not start:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def kubeconfig(localcluster: str) -> str:
    return localcluster


@pytest.fixture(scope="session")
def api_client(kubeconfig: str):
    from kubernetes import config

    return config.new_client_from_config(config_file=kubeconfig)


@pytest.fixture
def namespace(api_client) -> Iterator[str]:
    """A fresh namespace, deleted after the test."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    name = f"it-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    wait_until(lambda: _has_default_sa(core, name), 60, 0.5, f"default ServiceAccount in {name}")
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def _has_default_sa(core, ns: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        core.read_namespaced_service_account("default", ns)
        return True
    except ApiException:
        return False


@pytest.fixture(scope="session")
def ansible_env(kubeconfig: str) -> dict[str, str]:
    """Environment for ansible-playbook / ansible runs against the local cluster."""
    return ansible_environment(kubeconfig)


def ansible_environment(kubeconfig: str) -> dict[str, str]:
    """Environment for ansible-playbook / ansible runs against the API server of
    ``kubeconfig``."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        K8S_AUTH_KUBECONFIG=kubeconfig,
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_NOCOLOR="1",
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    return env


def module_command(module: str, args: dict[str, Any], check: bool, diff: bool) -> list[str]:
    """``ansible localhost -m`` for one module of the collection (short or full name)."""
    if "." not in module:
        module = f"gpucloud.platform.{module}"
    cmd = ["ansible", "localhost", "-m", module]
    # `-a '{}'` is read as raw parameters, which the collection's modules do not take
    cmd += ["-a", json.dumps(args)] if args else []
    cmd += ["--check"] if check else []
    cmd += ["--diff"] if diff else []
    return cmd


def module_result(module: str, stdout: str, stderr: str) -> dict[str, Any]:
    """The module's result out of the json callback's output."""
    try:
        data = json.loads(stdout)
        return data["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        pytest.fail(f"ansible {module} gave no result:\n{stdout}\n{stderr}")


@pytest.fixture(scope="session")
def run_module(ansible_env: dict[str, str]) -> Callable[..., dict[str, Any]]:
    """``run_module(module, args, check=False, diff=False)``: run one module of the
    collection on localhost the way a playbook does (``ansible -m``, so the module
    and its nested module_utils travel as Ansible packs them) against the local
    cluster; returns its result, failed or not. ``module`` is its short name
    (``tenant``) or its full one (``gpucloud.platform.tenant``)."""

    def run(
        module: str, args: dict[str, Any], check: bool = False, diff: bool = False
    ) -> dict[str, Any]:
        return run_module_in(ansible_env, module, args, check, diff)

    return run


def run_module_in(
    env: dict[str, str], module: str, args: dict[str, Any], check: bool = False, diff: bool = False
) -> dict[str, Any]:
    """One module run as ``run_module`` runs it, in the environment ``env``
    (``ansible_environment``): against another API server than the local cluster's."""
    proc = subprocess.run(
        module_command(module, args, check, diff),
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    return module_result(module, proc.stdout, proc.stderr)


@pytest.fixture(scope="session")
def start_module(ansible_env: dict[str, str]) -> Callable[..., Callable[[], dict[str, Any]]]:
    """``start_module(module, args)`` starts one module run in the background (as
    ``run_module`` runs it) and returns ``finish()``, which waits for it and returns its
    result: a fault test acts on the cluster while the module runs."""

    def start(module: str, args: dict[str, Any]) -> Callable[[], dict[str, Any]]:
        proc = subprocess.Popen(
            module_command(module, args, False, False),
            env=ansible_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

        def finish() -> dict[str, Any]:
            stdout, stderr = proc.communicate(timeout=600)
            return module_result(module, stdout, stderr)

        return finish

    return start


@pytest.fixture(scope="module")
def priority_classes(api_client) -> Iterator[None]:
    """The platform's PriorityClasses, which the jobs of a test name: created when
    missing (a test run on its own, before any bring-up), removed afterwards."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
        priority_class_manifests,
    )

    scheduling = client.SchedulingV1Api(api_client)
    created = []
    for manifest in priority_class_manifests():
        try:
            scheduling.create_priority_class(manifest)
            created.append(manifest["metadata"]["name"])
        except ApiException as exc:
            if exc.status != 409:
                raise
    yield
    for name in created:
        scheduling.delete_priority_class(name)


@pytest.fixture
def platform_scheduler_conf(api_client) -> Iterator[Any]:
    """The collection's default scheduler configuration (the one the scheduling_policy role
    writes, with gangpreempt) in volcano-system/volcano-scheduler-configmap for one test;
    waits for vc-scheduler to reload it, and puts back and reloads what was there (or
    deletes the ConfigMap when there was none)."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
        render_scheduler_conf,
    )
    from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import Kube

    kube = Kube(api_client)
    before = kube.scheduler_conf()
    kube.load_scheduler_conf(render_scheduler_conf())
    yield kube
    if before is not None:
        kube.load_scheduler_conf(before)
    else:
        kube.delete("v1", "ConfigMap", "volcano-scheduler-configmap", "volcano-system")


@pytest.fixture
def api_server(kubeconfig, api_client):
    """``stop()`` kills the local API server at once (SIGKILL, no graceful drain);
    after the test ``cluster.py up`` starts it again and waits until it is healthy."""

    class Fault:
        stopped = False

        def stop(self) -> None:
            # Killed from this process first: `cluster.py stop` spends its start-up (a
            # second or more on a busy machine) before its kill, and a module the test
            # means to cut off part-way may finish its writes in that time.
            pids = json.loads((state_dir() / "pids.json").read_text())
            pid = int(pids.get("kube-apiserver") or 0)
            cmdline = Path(f"/proc/{pid}/cmdline")
            if pid and cmdline.exists() and b"kube-apiserver" in cmdline.read_bytes():
                os.kill(pid, signal.SIGKILL)
            # Then cluster.py records it stopped, so that `up` starts it again.
            cluster_tool("stop", "kube-apiserver", "--timeout", "0")
            self.stopped = True

        def restore(self) -> None:
            """Start the API server again, and the components that watch it with it: their
            informers re-list only after a back-off of up to a minute, and until then
            Volcano's webhook denies writes to queues it does not know ("not found") and
            vc-scheduler does not see new PodGroups. The tests after this one get a
            cluster as fresh as at the start."""
            from kubernetes import client

            for component in WATCHERS:
                cluster_tool("stop", component)
            cluster_tool("up")
            self.stopped = False
            custom = client.CustomObjectsApi(api_client)
            wait_until(lambda: volcano_webhook_serves(custom), 60, 0.5, "Volcano's webhooks")

    fault = Fault()
    yield fault
    if fault.stopped:
        fault.restore()
