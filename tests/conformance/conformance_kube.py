# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small cluster helpers for the conformance scenarios (test code only)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    retry_while_denied,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    load_scheduler_conf,
    scheduler_conf,
)

GPU = "nvidia.com/gpu"
# A scenario's queues are typed by their name's last word, as the tenant module names them.
BILLING_OF_TYPE = {"spot": "spot", "payg": "payg"}
NODE_LABEL = "platform.io/conformance"
FIELD_MANAGER = "gpucloud-platform-conformance"
TIMEOUT = float(os.environ.get("CONFORMANCE_TIMEOUT_SECONDS", "240"))


def queue_type_of(queue: str) -> str:
    """spot, payg, subscription or team, from the queue's name (tenant-<t>-<what>)."""
    last = queue.rsplit("-", 1)[-1]
    return last if last in ("spot", "payg", "subscription") else "team"


def wait_for(
    what: str, check: Callable[[], Any], timeout: float = TIMEOUT, interval: float = 2.0
) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


class Kube:
    def __init__(self, api_client: client.ApiClient):
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.dyn = DynamicClient(api_client)

    # -- generic -------------------------------------------------------------
    def apply(self, manifest: dict[str, Any]) -> None:
        resource = self.dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        self.dyn.server_side_apply(
            resource,
            body=manifest,
            name=manifest["metadata"]["name"],
            namespace=manifest["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
        )

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        resource = self.dyn.resources.get(api_version=api_version, kind=kind)
        try:
            self.dyn.delete(resource, name=name, namespace=namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # -- scheduler configuration --------------------------------------------
    def scheduler_conf(self) -> str | None:
        return scheduler_conf(self.api_client)

    def load_scheduler_conf(self, text: str) -> None:
        load_scheduler_conf(self.api_client, text)

    # -- nodes ----------------------------------------------------------------
    def free_gpu_nodes(self, count: int, gpus: int = 8) -> list[str]:
        """`count` schedulable nodes with `gpus` allocatable GPUs and no GPU pod on them."""
        used: dict[str, int] = {}
        for pod in self.core.list_pod_for_all_namespaces().items:
            if pod.spec.node_name and pod.status.phase in ("Pending", "Running"):
                for c in pod.spec.containers:
                    req = (c.resources.requests or {}) if c.resources else {}
                    used[pod.spec.node_name] = used.get(pod.spec.node_name, 0) + int(
                        req.get(GPU, 0)
                    )
        names = []
        for node in sorted(self.core.list_node().items, key=lambda n: n.metadata.name):
            alloc = int((node.status.allocatable or {}).get(GPU, 0))
            labels = node.metadata.labels or {}
            if (
                alloc == gpus
                and not node.spec.unschedulable
                and used.get(node.metadata.name, 0) == 0
                and NODE_LABEL not in labels
            ):
                names.append(node.metadata.name)
        if len(names) < count:
            raise AssertionError(
                f"the scenario needs {count} free nodes with {gpus} GPUs, found {names}"
            )
        return names[:count]

    def label_nodes(self, names: list[str], value: str | None) -> None:
        for name in names:
            self.core.patch_node(name, {"metadata": {"labels": {NODE_LABEL: value}}})

    # -- tenants, queues, jobs ------------------------------------------------
    def namespace(self, name: str, labels: dict[str, str]) -> None:
        self.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        )

    def delete_namespace(self, name: str) -> None:
        self.delete("v1", "Namespace", name)

    def queue(
        self,
        name: str,
        deserved: int | None = None,
        capability: int | None = None,
        parent: str | None = None,
        guarantee: int | None = None,
        reclaimable: bool = True,
    ) -> None:
        spec: dict[str, Any] = {"reclaimable": reclaimable}
        if deserved is not None:
            spec["deserved"] = {GPU: str(deserved)}
        if capability is not None:
            spec["capability"] = {GPU: str(capability)}
        if guarantee is not None:
            spec["guarantee"] = {"resource": {GPU: str(guarantee)}}
        if parent:
            spec["parent"] = parent
        self.apply(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": spec,
            }
        )

    def queue_state(self, name: str) -> str | None:
        try:
            q = self.custom.get_cluster_custom_object(
                "scheduling.volcano.sh", "v1beta1", "queues", name
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return (q.get("status") or {}).get("state")

    def queue_allocated_gpus(self, name: str) -> int:
        """The GPUs vc-scheduler counts in the queue's status.allocated (it writes the
        status a little after the pods run)."""
        try:
            q = self.custom.get_cluster_custom_object(
                "scheduling.volcano.sh", "v1beta1", "queues", name
            )
        except ApiException as exc:
            if exc.status == 404:
                return 0
            raise
        allocated = (q.get("status") or {}).get("allocated") or {}
        return int(allocated.get("nvidia.com/gpu", 0))

    def wait_queue_open(self, name: str) -> None:
        """Volcano's job webhook refuses jobs in a queue whose status.state is not Open yet."""
        wait_for(
            f"queue {name} to be Open",
            lambda: self.queue_state(name) == "Open",
            timeout=60,
            interval=0.5,
        )

    def delete_queue(self, name: str) -> None:
        # Volcano's queue webhook judges by its informer cache: a parent deleted right
        # after its last child is refused ("has 1 child queues") until the cache catches up.
        retry_while_denied(lambda: self.delete("scheduling.volcano.sh/v1beta1", "Queue", name))

    def job_manifest(
        self,
        name: str,
        namespace: str,
        queue: str,
        priority_class: str,
        replicas: int,
        gpus_per_pod: int,
        node_value: str | None = None,
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        pod_spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {
                        "requests": {GPU: str(gpus_per_pod)},
                        "limits": {GPU: str(gpus_per_pod)},
                    },
                }
            ],
        }
        if node_value:
            pod_spec["nodeSelector"] = {NODE_LABEL: node_value}
        template: dict[str, Any] = {
            "metadata": {"labels": {"conformance-job": name}},
            "spec": pod_spec,
        }
        if annotations:
            template["metadata"]["annotations"] = annotations
        # Labelled and priced as the queue-billing policy asks (vcjob does the same).
        qtype = queue_type_of(queue)
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": {"platform.io/billing-type": BILLING_OF_TYPE.get(qtype, "subscription")},
        }
        if qtype == "spot":
            metadata["annotations"] = {"platform.io/spot-price": "0.1"}
        return {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": metadata,
            "spec": {
                "schedulerName": "volcano",
                "queue": queue,
                "priorityClassName": priority_class,
                "minAvailable": replicas,
                "tasks": [{"name": "worker", "replicas": replicas, "template": template}],
            },
        }

    def dry_run_create(self, manifest: dict[str, Any]) -> str | None:
        """None when admitted, else the denial message (the policies apply to dry runs too)."""
        group, version = manifest["apiVersion"].split("/")
        plural = {"Job": "jobs", "PodGroup": "podgroups"}[manifest["kind"]]
        try:
            self.custom.create_namespaced_custom_object(
                group,
                version,
                manifest["metadata"]["namespace"],
                plural,
                manifest,
                dry_run="All",
            )
            return None
        except ApiException as exc:
            if exc.status not in (400, 403, 422):
                raise
            return exc.body if isinstance(exc.body, str) else str(exc.body)

    def submit(self, manifest: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", manifest["metadata"]["namespace"], "jobs", manifest
        )

    def pod_group_phase(self, namespace: str, job: str) -> str | None:
        """The phase of the PodGroup Volcano's job controller made for ``job``."""
        groups = self.custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
        )["items"]
        for pg in groups:
            owners = pg["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
                return (pg.get("status") or {}).get("phase")
        return None

    def delete_waiting_jobs(self, namespace: str) -> int:
        """Delete the Jobs of ``namespace`` whose PodGroup is not Running (a large job vc-scheduler
        keeps pipelining onto nodes whose pods it counts as releasing); returns how many. Removing
        them before the namespace, a cycle ahead of the running pods, keeps vc-scheduler 1.15.1
        from deleting a pipelined victim it no longer finds on its node, which once left a node's
        GPUs counted as releasing for good (every later scenario then lacked them)."""
        groups = self.custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
        )["items"]
        waiting = {
            o["name"]
            for pg in groups
            if (pg.get("status") or {}).get("phase") != "Running"
            for o in pg["metadata"].get("ownerReferences") or []
            if o.get("kind") == "Job"
        }
        for job in sorted(waiting):
            with contextlib.suppress(ApiException):
                self.custom.delete_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", namespace, "jobs", job
                )
        return len(waiting)

    def pods_of(self, namespace: str, job: str) -> list[client.V1Pod]:
        return self.core.list_namespaced_pod(
            namespace, label_selector=f"conformance-job={job}"
        ).items

    def running(self, namespace: str, job: str, replicas: int) -> bool:
        pods = [p for p in self.pods_of(namespace, job) if p.metadata.deletion_timestamp is None]
        return len(pods) >= replicas and sum(p.status.phase == "Running" for p in pods) >= replicas

    def wait_running(
        self, namespace: str, job: str, replicas: int, timeout: float = TIMEOUT
    ) -> list[str]:
        wait_for(
            f"{namespace}/{job} running", lambda: self.running(namespace, job, replicas), timeout
        )
        return sorted(
            p.metadata.uid for p in self.pods_of(namespace, job) if p.status.phase == "Running"
        )


class PodDeletions:
    """Watches pods of a namespace (or all) and records, in order, the jobs whose running
    pods got a deletion timestamp or were deleted: the evictions."""

    def __init__(self, kube: Kube, namespaces: list[str]):
        self.kube = kube
        self.namespaces = namespaces
        self.order: list[str] = []
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(ns,), daemon=True) for ns in namespaces
        ]

    def _run(self, namespace: str) -> None:
        w = watch.Watch()
        while not self._stop.is_set():
            try:
                for event in w.stream(
                    self.kube.core.list_namespaced_pod, namespace, timeout_seconds=5
                ):
                    pod = event["object"]
                    job = (pod.metadata.labels or {}).get("conformance-job")
                    gone = event["type"] == "DELETED" or pod.metadata.deletion_timestamp is not None
                    if job and gone and pod.metadata.uid not in self.seen:
                        self.seen.add(pod.metadata.uid)
                        key = f"{namespace}/{job}"
                        if key not in self.order:
                            self.order.append(key)
                    if self._stop.is_set():
                        break
            except Exception:
                time.sleep(1)

    def __enter__(self) -> PodDeletions:
        for t in self._threads:
            t.start()
        time.sleep(1)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)


def evictions(core: client.CoreV1Api, namespace: str) -> list[tuple[str, str]]:
    """(job, action) for every eviction vc-scheduler made in ``namespace``, in the order it
    made them.

    Read from the ``Evict`` Events on the PodGroups, not from the scheduler's log: its cache
    (pkg/scheduler/cache/cache.go, ``Evict``) records the Event synchronously, in the order the
    session commits its evictions, and client-go's event recorder writes Events one after
    another from a single goroutine, so their resourceVersions follow that order. The
    "Evicting pod" log line is written by the goroutine that sends each eviction, so under load
    the log can show them in another order (measured). A PodGroup of a Volcano Job is named
    ``<job>-<job uid>``."""
    events = core.list_namespaced_event(namespace, field_selector="reason=Evict").items
    ordered = sorted(
        (e for e in events if e.involved_object.kind == "PodGroup"),
        key=lambda e: int(e.metadata.resource_version),
    )
    return [(e.involved_object.name.rsplit("-", 5)[0], e.message) for e in ordered]
