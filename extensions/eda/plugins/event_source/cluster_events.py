# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpucloud.platform.cluster_events: an Event-Driven Ansible source of the GPU platform's
events (what each means: ``DOCUMENTATION``; the rules: ``plugins/module_utils/events``).

Run it alone to print the events of the cluster of ``KUBECONFIG`` (or ``K8S_AUTH_*``), one
JSON object a line, until interrupted or for ``--seconds``::

    KUBECONFIG=~/.kube/config python extensions/eda/plugins/event_source/cluster_events.py --seconds 5
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
---
short_description: The GPU platform's meaningful cluster changes, as events.
description:
  - Lists and watches Volcano's Queues and PodGroups, the Nodes and the platform's
    ConfigMaps (label C(platform.io/managed-by=gpucloud-platform)) and emits an event only
    for a change that means work.
  - C(paying_job_blocked) - a PodGroup Pending or Inqueue and Unschedulable in a paying
    queue (subscription, team or pay-as-you-go, by the Queue's own labels) while the spot
    queues hold GPUs. Adds C(queue), C(queue_type) and C(spot_gpus).
  - C(large_job_waiting), C(large_job_running), C(large_job_gone) - a PodGroup of
    PriorityClass C(large-job) added or moved into Pending or Inqueue, added or moved into
    Running, or deleted; never for a status update that keeps its phase. Add C(queue) and
    C(phase).
  - C(pool_changed) - a GPU node added, removed, cordoned, uncordoned, with other
    allocatable GPUs, Ready or no longer Ready; one event per change. Adds C(change)
    (added, removed, cordoned, uncordoned, allocatable, ready, not-ready) and C(gpus).
  - C(subscription_changed) - a managed subscription, team or pay-as-you-go Queue added,
    removed, or its C(spec.deserved) or C(spec.capability) GPUs changed (adds C(queue),
    C(queue_type), C(change) (added, removed, deserved, capability), C(deserved_gpus) and
    C(capability_gpus), null when unset); or the ConfigMap C(platform-queues) of a tenant
    namespace added, removed or changed (adds C(change) added, removed or changed).
  - C(gpu_health_changed) - a GPU node added with its GPUs failed or whose GPUs fail (a
    condition of one of the types O(gpu_unhealthy_conditions) turns C(True)), C(change)
    C(unhealthy); or whose last such condition stops being C(True) or is removed,
    C(change) C(healthy); never for a condition that stays C(True) with another message
    or heartbeat, another condition type, or a removed node. Adds C(change),
    C(conditions) (the failing types, empty for C(healthy)) and C(gpus).
  - Every event has C(platform_event), C(kind), C(name), C(namespace) (empty when
    cluster-scoped), C(tenant) (empty when none), C(reason) (a sentence) and C(at) (RFC
    3339, UTC).
  - A burst of one event name is emitted as its first and its newest (O(coalesce_seconds)).
  - The first LIST is a change of every object (each GPU node and paying queue is
    C(added)). After 410 Gone a kind is listed again and what changed meanwhile is
    emitted; while the API server is away the source waits (0.5 s doubling to 5 s) and
    watches again from where it was. The paying jobs still blocked, the large jobs
    still waiting and the GPU nodes whose GPUs have failed and that do not carry the taint
    C(platform.io/gpu-unhealthy) yet (not quarantined) are emitted again every
    C(resync_seconds) and after a re-list.
options:
  kubeconfig:
    description:
      - Path to a kubeconfig, or its content as a mapping. Default C(K8S_AUTH_KUBECONFIG),
        then C(KUBECONFIG) or C(~/.kube/config).
    type: raw
  context:
    description: The kubeconfig context. Default C(K8S_AUTH_CONTEXT).
    type: str
  host:
    description: The API server URL. Default C(K8S_AUTH_HOST).
    type: str
  api_key:
    description: A bearer token. Default C(K8S_AUTH_API_KEY).
    type: str
  username:
    description: Basic authentication user. Default C(K8S_AUTH_USERNAME).
    type: str
  password:
    description: Basic authentication password. Default C(K8S_AUTH_PASSWORD).
    type: str
  validate_certs:
    description: Verify the API server's certificate. Default C(K8S_AUTH_VERIFY_SSL).
    type: bool
  ca_cert:
    description: CA certificate file. Default C(K8S_AUTH_SSL_CA_CERT).
    type: str
  client_cert:
    description: Client certificate file. Default C(K8S_AUTH_CERT_FILE).
    type: str
  client_key:
    description: Client key file. Default C(K8S_AUTH_KEY_FILE).
    type: str
  proxy:
    description: An HTTP proxy URL. Default C(K8S_AUTH_PROXY).
    type: str
  resync_seconds:
    description: How often the standing conditions are emitted again, in seconds (above 0).
    type: float
    default: 30
  coalesce_seconds:
    description:
      - The coalescing window, in seconds (0 or more; 0 emits every event). Per event name, the first event after a
        quiet period is emitted at once; later ones within the window are held, the newest kept, and emitted when the
        window closes, with C(coalesced) (how many it stands for); a burst that goes on is one event per window.
      - ansible-rulebook's C(throttle) gives a matching event to the first throttled rule only, so a rulebook cannot
        debounce one event for two reconciles, nor keep both the first and the last of a burst; the source does.
    type: float
    default: 5
  kinds:
    description:
      - The kinds watched. C(paying_job_blocked) needs Queue and PodGroup, the large-job
        events PodGroup, C(pool_changed) and C(gpu_health_changed) Node,
        C(subscription_changed) Queue and ConfigMap.
    type: list
    elements: str
    choices: [Queue, Node, ConfigMap, PodGroup]
    default: [Queue, Node, ConfigMap, PodGroup]
  gpu_unhealthy_conditions:
    description:
      - The Node condition types whose status C(True) says a node's GPUs failed
        (C(gpu_health_changed)); a node-problem-detector custom plugin reporting the GPUs
        sets one of its own name.
      - The same list as the C(gpu_health_unhealthy_conditions) of C(playbooks/gpu_health.yml)
        (module C(gpucloud.platform.gpu_health)'s C(unhealthy_conditions)), so that the
        run an event starts judges the node as the event did. Distinct names, never C(Ready).
    type: list
    elements: str
    default: [GpuUnhealthy]
"""

EXAMPLES = r"""
- name: Reconcile the platform on cluster events
  hosts: localhost
  sources:
    - name: The cluster's queues, jobs, nodes and tenants
      gpucloud.platform.cluster_events:
        kubeconfig: /runner/.kube/config  # none given: KUBECONFIG, K8S_AUTH_*
        resync_seconds: 30
  rules:
    - name: A paying job waits for GPUs spot holds
      condition: event.platform_event == "paying_job_blocked"
      action:
        run_playbook:
          name: playbooks/spot_recompute.yml
"""

COLLECTION = ("ansible_collections", "gpucloud", "platform")
# How long a stop waits for the watching threads (they are daemons: never longer).
STOP_SECONDS = 10.0

Emit = Callable[[dict[str, Any]], None]
# Runs the source until its stop event is set: (args, emit, stop) -> None.
Runner = Callable[[dict[str, Any], Emit, threading.Event], None]


def _collection_roots() -> list[Path]:
    """Where ``ansible_collections.gpucloud.platform`` may be found: above this file (where
    ansible-rulebook runs it from, inside the installed collection), then Ansible's
    collections paths."""
    roots = [p.parent for p in Path(os.path.abspath(__file__)).parents if p.name == COLLECTION[0]]
    try:
        from ansible import constants  # the collections_path of ansible.cfg and the environment

        roots += [Path(p) for p in constants.COLLECTIONS_PATHS]
    except Exception:  # pylint: disable=broad-exception-caught
        pass  # no ansible-core: only the path above this file
    return [r for r in roots if r.joinpath(*COLLECTION).is_dir()]


def _events_package() -> Any:
    """The collection's ``events`` package. ansible-rulebook runs a source by its path,
    without Ansible's collection loader: the collection's root is put on ``sys.path``."""
    try:
        from ansible_collections.gpucloud.platform.plugins.module_utils import events
    except ImportError:
        for root in _collection_roots():
            if str(root) not in sys.path:
                sys.path.append(str(root))
        from ansible_collections.gpucloud.platform.plugins.module_utils import events
    return events


def run_service(args: dict[str, Any], emit: Emit, stop: threading.Event) -> None:
    """The collection's source (``events/service.run_source``), on this thread."""
    _events_package()
    from ansible_collections.gpucloud.platform.plugins.module_utils.events import inputs, service

    service.run_source(inputs.source_args(args), emit, stop)


def check_args(args: dict[str, Any]) -> None:
    """Refuse bad arguments before any thread starts (rule event-source-args)."""
    _events_package()
    from ansible_collections.gpucloud.platform.plugins.module_utils.events import inputs

    inputs.source_args(args)


async def forward(queue: Any, args: dict[str, Any], runner: Runner) -> None:
    """Run ``runner`` on a thread and put each event it emits on ``queue``, in order, until
    the runner fails (its error is raised here) or this task is cancelled (the runner is
    asked to stop). The runner's thread hands events over with ``call_soon_threadsafe``
    into an unbounded queue of this loop; ansible-rulebook's own source queue holds one
    event, so they reach it with ``await queue.put`` (a full queue waits, and nothing is
    dropped)."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    stop = threading.Event()
    finished: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if finished.done():
            return
        if error is None:
            finished.set_result(None)
        else:
            finished.set_exception(error)

    def emit(event: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(pending.put_nowait, event)

    def target() -> None:
        error: BaseException | None = None
        try:
            runner(args, emit, stop)
        except BaseException as exc:  # pylint: disable=broad-exception-caught
            error = exc
        # RuntimeError: the loop is closed, nobody waits for this thread any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, error)

    thread = threading.Thread(target=target, name="cluster-events", daemon=True)
    thread.start()
    getter: asyncio.Future[dict[str, Any]] | None = None
    try:
        while True:
            getter = asyncio.ensure_future(pending.get())
            await asyncio.wait({getter, finished}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                await queue.put(getter.result())
                continue
            getter.cancel()
            while not pending.empty():  # what it emitted before it ended
                await queue.put(pending.get_nowait())
            finished.result()  # the runner's error, if it failed
            return
    finally:
        if getter is not None and not getter.done():
            getter.cancel()
        stop.set()
        await loop.run_in_executor(None, thread.join, STOP_SECONDS)


async def main(queue: asyncio.Queue[Any], args: dict[str, Any]) -> None:
    """ansible-rulebook's entry point: the platform's events, forever."""
    check_args(args)
    await forward(queue, args, run_service)


if __name__ == "__main__":
    # Run alone: print each event as one line of JSON (KUBECONFIG or K8S_AUTH_* say which
    # cluster), until interrupted or for --seconds.
    import argparse
    import json

    parser = argparse.ArgumentParser(description="Print the GPU platform's cluster events.")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this long (0: never)")
    parser.add_argument("--resync-seconds", type=float, default=30)

    class PrintingQueue(asyncio.Queue[Any]):
        """A queue that prints what is put on it."""

        async def put(self, event: Any) -> None:
            print(json.dumps(event, sort_keys=True), flush=True)

    async def watch(seconds: float, resync: float) -> None:
        source = main(PrintingQueue(), {"resync_seconds": resync})
        if seconds <= 0:
            await source
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(source, seconds)

    options = parser.parse_args()
    try:
        asyncio.run(watch(options.seconds, options.resync_seconds))
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
