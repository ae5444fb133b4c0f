# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a tenant run reports what it changes, and what the live objects say."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import Queue
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.plan import (
    CAPACITY,
    CREATE,
    DELETE,
    UPDATE,
    QueueStep,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.changes import (
    Changes,
    diff_key,
    step_action,
    step_manifest,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.live import (
    active_jobs,
    active_pods,
    queues_in_delete_order,
)


def queue(name, parent="root"):
    return {"kind": "Queue", "metadata": {"name": name}, "spec": {"parent": parent}}


def test_diff_key_leaves_out_the_namespace_of_cluster_scoped_objects():
    assert diff_key(queue("q")) == "Queue/q"
    cm = {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    assert diff_key(cm) == "ConfigMap/n/c"


def test_record_reports_once_and_wrote_lists_real_writes():
    changes = Changes()
    live = {**queue("q"), "metadata": {"name": "q", "uid": "1"}, "spec": {"parent": "root", "x": 1}}
    changes.record(queue("q"), UPDATE, live)
    changes.record(queue("q"), UPDATE, live)
    assert changes.objects == [{"kind": "Queue", "name": "q", "action": "update"}]
    # the live object cut down to what the manifest names, server fields dropped
    assert changes.diff()["before"] == {
        "Queue/q": {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"parent": "root"}}
    }
    assert changes.done == []
    changes.wrote(queue("q"), UPDATE)
    assert changes.done == ["update Queue/q"]


def test_step_action_and_manifest():
    q = Queue(name="tenant-a-ml", parent="tenant-a-subscription")
    assert step_action(QueueStep(CAPACITY, q.name, q), None) == CREATE
    assert step_action(QueueStep(CAPACITY, q.name, q), {"live": 1}) == UPDATE
    assert step_action(QueueStep(DELETE, q.name), {"live": 1}) == DELETE
    assert step_manifest(QueueStep(DELETE, q.name))["metadata"] == {"name": q.name}
    assert step_manifest(QueueStep(UPDATE, q.name, q)) == q.to_manifest()


def test_queues_are_deleted_children_first():
    queues = {
        "sub": queue("sub"),
        "ml": queue("ml", "sub"),
        "spot": queue("spot"),
        "odd": queue("odd", None),
    }
    order = [q["metadata"]["name"] for q in queues_in_delete_order(queues)]
    assert order == ["ml", "sub", "spot", "odd"]


def test_active_jobs_and_pods():
    jobs = [{"status": {"state": {"phase": p}}} for p in ("Running", "Completed", "Aborted")]
    assert len(active_jobs([*jobs, {}])) == 2  # a job without a phase yet is active
    pods = [{"status": {"phase": p}} for p in ("Pending", "Running", "Succeeded")]
    assert len(active_pods([*pods, {}])) == 3
