# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform reacting to the cluster in seconds (docs/event-driven.md): the real
``ansible-rulebook`` runs ``extensions/eda/rulebooks/platform_reconcile.yml`` with the
collection's event source against the local cluster, and no playbook is started by hand:

* a subscription job that spot jobs keep from its GPUs runs after the cheapest spot jobs
  are deleted (``paying_job_blocked`` -> ``spot_recompute.yml``);
* a GPU node added to the pool raises the spot capabilities, also after the API server
  was stopped and started under the watch (``pool_changed``);
* a GPU node whose GPUs fail is quarantined in seconds
  (``gpu_health_changed`` -> ``gpu_health.yml``);
* a large job's throttle is released when the job runs, and when it is deleted
  (``large_job_running``, ``large_job_gone`` -> ``throttle_reconcile.yml``);
* a storm of 100 queue updates is a handful of runs, not a run per update.

kwok runs no containers: the jobs' pods are Running without a process, which is all the
scheduler and the reconciles look at.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator

import pytest

from ansible_collections.gpucloud.platform.benchmarks.reaction.pool import add_node
from ansible_collections.gpucloud.platform.benchmarks.reaction.rulebook import (
    SPOT_PLAY,
    Rulebook,
)
from ansible_collections.gpucloud.platform.tests.integration import test_jobs as job_tests
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_spot import (
    GPU,
    VCJOBS,
    VOLCANO,
    job_body,
    job_phase,
)
from ansible_collections.gpucloud.platform.tests.integration.test_spot_sold import running, start

# The throttle scenario's fixtures (its tenant, with the throttle's admission policy).
dyn, platform_objects, tenant = job_tests.dyn, job_tests.platform_objects, job_tests.tenant

pytestmark = pytest.mark.integration

GPU_HEALTH_PLAY = "PLAY [GPU health]"

# The source's coalescing window is 5 s; a reaction is at most one window, a playbook
# run (a few seconds on two cores) and a scheduling period or two.
REACTION_S = 60
# A storm's trailing run starts up to a window after its last update, behind the run
# that holds the playbook's lock: quiet this long means the storm is over.
STORM_QUIET_S = 12


@pytest.fixture(scope="module")
def rulebook(ansible_env, kubeconfig, priority_classes, tmp_path_factory) -> Iterator[Rulebook]:
    log = tmp_path_factory.mktemp("rulebook") / "ansible-rulebook.log"
    env = dict(ansible_env, KUBECONFIG=kubeconfig, ANSIBLE_STDOUT_CALLBACK="default")
    env.pop("K8S_AUTH_KUBECONFIG", None)  # the source's default: KUBECONFIG
    book = Rulebook.start(env, log)
    try:
        yield book
    finally:
        book.stop()


@pytest.fixture(scope="module")
def two_tenants(run_module, api_client):
    """Two tenants of 8 GPUs for the module (the tests leave no job behind)."""
    suffix = uuid.uuid4().hex[:6]
    names = (f"eda{suffix}", f"edb{suffix}")
    for name in names:
        created = run_module(
            "tenant", {"name": name, "subscription": {GPU: 8, "cpu": "32", "memory": "128Gi"}}
        )
        assert not created.get("failed"), created.get("msg")
    yield names
    remove_tenants(run_module, api_client, list(names))


def spot_capability(custom, queue: str) -> int:
    live = custom.get_cluster_custom_object(*VOLCANO, queue)
    return int(((live.get("spec") or {}).get("capability") or {}).get(GPU, 0))


def test_a_blocked_subscription_job_runs_after_the_cheapest_spot_jobs_go(
    api_client, rulebook, two_tenants, run_module, platform_scheduler_conf
):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    owner, spot_tenant = two_tenants
    own_ns, spot_ns = f"tenant-{owner}", f"tenant-{spot_tenant}"
    own_queue, spot_queue = f"{own_ns}-subscription", f"{spot_ns}-spot"
    rulebook.settle()  # the purchases were subscription changes: spot recomputed

    idle = run_module("spot_reclaim", {"need": 0}, check=True)
    pool = idle["pool"]
    if idle["free"] != pool or pool % 8 or pool < 32:
        pytest.skip(f"needs an idle cluster of 8-GPU nodes; {idle['free']} of {pool} free")
    # What a stale recompute leaves behind: spot offered the whole pool. Spot queues are
    # not watched for this, so nothing reacts to the patch itself.
    custom.patch_cluster_custom_object(
        *VOLCANO, spot_queue, {"spec": {"capability": {GPU: pool, "cpu": "1000", "memory": "4Ti"}}}
    )
    made = [(spot_ns, "spot-fill"), (own_ns, "own-1"), (spot_ns, "spot-cheap")]
    made += [(spot_ns, "spot-mid"), (own_ns, "own-2")]
    try:
        blocked_job_runs(custom, core, rulebook, own_ns, spot_ns, own_queue, spot_queue, pool)
    finally:
        for ns, name in made:
            with contextlib.suppress(ApiException):
                custom.delete_namespaced_custom_object(*VCJOBS[:2], ns, VCJOBS[2], name)


def blocked_job_runs(custom, core, rulebook, own_ns, spot_ns, own_queue, spot_queue, pool):
    start(custom, job_body("spot-fill", spot_ns, spot_queue, 8, (pool - 16) // 8, "0.9"))
    running(custom, spot_ns, "spot-fill")
    start(custom, job_body("own-1", own_ns, own_queue, 4, 1, billing="subscription"))
    running(custom, own_ns, "own-1")
    start(custom, job_body("spot-cheap", spot_ns, spot_queue, 4, 1, "0.1"))
    running(custom, spot_ns, "spot-cheap")
    start(custom, job_body("spot-mid", spot_ns, spot_queue, 4, 2, "0.2"))
    running(custom, spot_ns, "spot-mid")
    before = rulebook.runs(SPOT_PLAY)

    # The owner asks for 4 more of its 8 GPUs; spot holds them. Nobody runs a playbook.
    asked = time.monotonic()
    start(custom, job_body("own-2", own_ns, own_queue, 4, 1, billing="subscription"))
    wait_until(
        lambda: job_phase(custom, own_ns, "own-2") == "Running", REACTION_S, 0.5, "own-2 Running"
    )
    took = time.monotonic() - asked
    assert rulebook.runs(SPOT_PLAY) > before
    events = core.list_namespaced_event(spot_ns, field_selector="reason=SpotReclaimed").items
    assert {e.involved_object.name for e in events} == {"spot-cheap", "spot-mid"}
    assert job_phase(custom, spot_ns, "spot-fill") == "Running"
    print(f"own-2 ran {took:.1f} s after it was submitted")


def test_a_node_added_after_an_api_server_restart_raises_the_spot_capabilities(
    api_client, rulebook, two_tenants, api_server
):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    spot_queue = f"tenant-{two_tenants[0]}-spot"
    rulebook.settle()
    before = spot_capability(custom, spot_queue)

    # The API server goes away under the watch (killed, no drain) and comes back, with
    # the local cluster's other watchers, as in the fault tests.
    api_server.stop()
    time.sleep(3)
    api_server.restore()

    name = f"eda-node-{uuid.uuid4().hex[:5]}"
    try:
        add_node(core, name)
        wait_until(
            lambda: spot_capability(custom, spot_queue) > before,
            REACTION_S,
            0.5,
            f"{spot_queue}'s capability to rise above {before}",
        )
    finally:
        try:
            core.delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    # And it falls back when the node leaves.
    wait_until(
        lambda: spot_capability(custom, spot_queue) == before,
        REACTION_S,
        0.5,
        f"{spot_queue}'s capability back to {before}",
    )


def test_a_gpu_node_that_fails_is_quarantined_in_seconds(api_client, rulebook, two_tenants):
    """A GPU node whose GpuUnhealthy condition turns True (as node-problem-detector would
    set it) is quarantined by the GPU health run the event starts (``gpu_health_changed``),
    and the spot capabilities settle without its GPUs (its cordon is a ``pool_changed``).
    The whole quarantine, its jobs and the spot pool's drop are ``test_gpu_health.py``'s."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    spot_queue = f"tenant-{two_tenants[0]}-spot"
    rulebook.settle()
    before = spot_capability(custom, spot_queue)
    runs = rulebook.runs(GPU_HEALTH_PLAY)
    name = f"eda-sick-{uuid.uuid4().hex[:5]}"
    try:
        add_node(core, name)
        fault = {
            "type": "GpuUnhealthy",
            "status": "True",
            "reason": "XidError",
            "message": "XID 79",
        }
        core.patch_node_status(name, {"status": {"conditions": [fault]}})
        node = wait_until(
            lambda: (n := core.read_node(name)).spec.unschedulable and n,
            REACTION_S,
            0.5,
            f"{name} quarantined",
        )
        assert "platform.io/gpu-unhealthy" in [t.key for t in node.spec.taints or []]
        assert rulebook.runs(GPU_HEALTH_PLAY) > runs
        rulebook.settle()
        assert spot_capability(custom, spot_queue) == before
    finally:
        with contextlib.suppress(Exception):
            core.delete_node(name)


def test_a_large_jobs_throttle_is_released_when_it_runs_and_when_it_is_deleted(
    rulebook,
    dyn,
    run_module,
    tenant,
    platform_scheduler_conf,
):
    """test_jobs' scenario (its tenant, with the throttle's admission policy in place), with
    no playbook started: the rulebook's throttle_reconcile.yml releases the throttle."""
    from ansible_collections.gpucloud.platform.tests.integration.test_jobs import (
        _large_without_sla,
        _team_queue_of_32_with_8_used,
        _throttle_cm,
        large_args,
    )

    ns = f"tenant-{tenant}"
    jobs = dyn.resources.get(api_version=f"{VCJOBS[0]}/{VCJOBS[1]}", kind="Job")
    _team_queue_of_32_with_8_used(dyn, run_module, tenant)

    # Released when it runs: the job holding 8 of the queue's 32 GPUs ends.
    waiting = _large_without_sla(run_module, tenant, "big")
    assert waiting["phase"] == "Pending", waiting.get("msg")
    # Engaged by vcjob after its grace, or already by the rulebook's run for
    # large_job_waiting (then vcjob finds it engaged and reports false).
    wait_until(lambda: _throttle_cm(dyn, ns), REACTION_S, 0.5, "the throttle engaged")
    jobs.delete(name="used", namespace=ns)
    wait_until(lambda: _throttle_cm(dyn, ns) is None, REACTION_S, 0.5, "the throttle released")
    # The throttle lets go when the PodGroup runs; Volcano's job controller writes the Job's
    # own phase a moment later, from its pods.
    wait_until(lambda: job_phase_dyn(jobs, ns, "big") == "Running", REACTION_S, 0.5, "big running")

    # Released when it is deleted: a second large job waits behind the first.
    again = run_module("vcjob", {**large_args(tenant, "big-2", 4), "throttle_timeout": 300})
    assert again["phase"] == "Pending", again.get("msg")
    wait_until(lambda: _throttle_cm(dyn, ns), REACTION_S, 0.5, "the throttle engaged again")
    jobs.delete(name="big-2", namespace=ns)
    wait_until(lambda: _throttle_cm(dyn, ns) is None, REACTION_S, 0.5, "the throttle released")


def job_phase_dyn(jobs, ns: str, name: str) -> str:
    status = jobs.get(name=name, namespace=ns).to_dict().get("status") or {}
    return (status.get("state") or {}).get("phase", "")


def test_a_storm_of_queue_updates_is_a_handful_of_runs(api_client, rulebook, two_tenants):
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    payg = f"tenant-{two_tenants[0]}-payg"
    rulebook.settle()
    before = rulebook.runs(SPOT_PLAY)
    # 100 updates that each change a paying queue's GPUs, in about 5 s.
    started = time.monotonic()
    for i in range(100):
        gpus = i % 2
        custom.patch_cluster_custom_object(
            *VOLCANO, payg, {"spec": {"capability": {GPU: gpus}, "deserved": {GPU: gpus}}}
        )
        time.sleep(max(0.0, started + (i + 1) * 0.05 - time.monotonic()))
    rulebook.settle(quiet_s=STORM_QUIET_S)
    runs = rulebook.runs(SPOT_PLAY) - before
    # The source passes the storm's first update at once, then its newest once per 5 s
    # window (rule event-coalesce): a run each.
    assert 1 <= runs <= 6, f"{runs} runs for 100 updates"
    print(json.dumps({"updates": 100, "runs": runs, "seconds": round(time.monotonic() - started)}))
