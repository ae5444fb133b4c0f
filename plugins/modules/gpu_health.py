#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_health
short_description: Take nodes whose GPUs fail out of service, and bring them back once healthy
version_added: 0.2.0
description:
  - "Judges every node of O(node_selector) (rule gpu-unhealthy): unhealthy when one of its conditions of the types
    O(unhealthy_conditions) has status C(True) (a node-problem-detector custom plugin is how a site usually sets one)
    or, with O(prometheus_url), when dcgm-exporter reports for it (label C(Hostname) or C(hostname)) a GPU whose XID
    within O(xid_window) is one of O(fatal_xids), or a failed row remap (C(DCGM_FI_DEV_ROW_REMAP_FAILURE > 0))."
  - "Quarantine (rule quarantine): an unhealthy node with allocatable C(nvidia.com/gpu) is tainted
    C(platform.io/gpu-unhealthy:NoSchedule), cordoned, and annotated with C(platform.io/gpu-quarantined-at),
    C(platform.io/gpu-quarantine-reason) and C(platform.io/gpu-quarantine-cordoned) (whether the platform cordoned
    it; a node an admin had cordoned is never uncordoned by the release). A cordoned node is out of the spot and
    oversell pools, so the next spot recompute takes its GPUs out of them."
  - "Guard (rule quarantine-guard): at most O(max_quarantine) nodes are newly quarantined in one run (nodes
    quarantined already do not count); more, and the run refuses before any write, naming the nodes and the option."
  - "Jobs on a quarantined node (rule quarantine-jobs): a spot or debug Volcano Job is deleted; a critical one is left
    running, said in a warning and RV(jobs); every other one has its pods on the node evicted through the Eviction
    API (Volcano restarts it elsewhere). Pods no Volcano Job owns are left alone and listed in RV(unowned_pods). Each
    stopped job raises the C(platform.io/gpu-quarantine-disrupted-jobs) count of its Queue (rule quarantine-count)."
  - "Release (rule quarantine-release): a quarantined node healthy again is annotated
    C(platform.io/gpu-healthy-since); once healthy for O(healthy_period) without a break, its taint and annotations
    are removed and it is uncordoned when the platform cordoned it."
  - "Each quarantine and release records an Event on the node (C(GpuQuarantined), C(GpuReleased)), each stopped job
    a C(GpuQuarantined) Event, and a run that quarantined, released or stopped anything an entry in ConfigMap
    C(platform-system/gpu-health-history) (at most O(history_size) entries, newest first)."
  - "Reads one list of Nodes and, with O(prometheus_url), two Prometheus queries; only when a GPU node is or becomes
    quarantined, one list each of unfinished Pods, Volcano Jobs and Queues. Writes only what changes; safe to run
    every few minutes."
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
options:
  prometheus_url:
    description:
      - The Prometheus base URL, for example C(http://prometheus.monitoring:9090); the module asks
        C(<prometheus_url>/api/v1/query_range) at the moment it reads the Nodes. Without it only the node conditions
        are read.
      - "An unreachable Prometheus, an HTTP error or an answer whose C(status) is not C(success) fails the run before
        any write, naming O(prometheus_url)."
    type: str
  timeout:
    description:
      - Seconds to wait for each Prometheus answer.
    type: int
    default: 30
  unhealthy_conditions:
    description:
      - The Node condition types that, with status C(True), mean the node's GPUs failed.
    type: list
    elements: str
    default: [GpuUnhealthy]
  fatal_xids:
    description:
      - The XID codes that take a node out of service. The default is the XIDs of NVIDIA's XID catalogue that call
        for a GPU reset, a reboot or a hardware check (48, 63, 64, 74, 79, 92, 94, 95, 119, 120); the XIDs an
        application causes (13, 31, 43, 45) are left out.
    type: list
    elements: int
    default: [48, 63, 64, 74, 79, 92, 94, 95, 119, 120]
  xid_window:
    description:
      - How far back an XID counts, a PromQL duration, for example C(10m); longer than the time between runs.
    type: str
    default: 10m
  max_quarantine:
    description:
      - The most nodes one run newly quarantines. Default 2, so a fleet-wide signal glitch does not cordon the
        fleet; raise it for a run a person decided on.
    type: int
    default: 2
  healthy_period:
    description:
      - How long a quarantined node must stay healthy, without a break, before it is released; a Go duration such as
        C(30m) or C(1h).
    type: str
    default: 30m
  node_selector:
    description:
      - Judge only the nodes carrying every one of these labels (rule node-selector). Empty means every node.
    type: dict
    default: {}
  history_size:
    description:
      - The most entries ConfigMap C(gpu-health-history) keeps.
    type: int
    default: 50
  state:
    description:
      - V(present) quarantines and releases, writing what changes.
      - V(gathered) makes the same reads and returns them in RV(gathered) (the Nodes, the Prometheus series, the time
        they were read and, when read, the Pods, Volcano Jobs and Queues); nothing is written.
      - V(parsed) plans from O(facts) as of their C(read_at) without connecting, and returns what a check-mode run
        returns, with C(changed=false).
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(read_at), C(nodes),
        C(xid_series), C(row_remap_series), C(pods), C(jobs), C(queues)).
    type: dict
attributes:
  diff_mode:
    support: full
    details:
      - One diff per node written (its taints, C(unschedulable) and quarantine annotations) and per stopped job.
notes:
  - In check mode the node patches, deletions, evictions and counts are server-side dry runs; no Event or history is
    written.
seealso:
  - module: gpucloud.platform.spot_capacity
"""

EXAMPLES = r"""
- name: Quarantine the nodes whose GPUs fail, release those healthy for 30 minutes
  gpucloud.platform.gpu_health:
    prometheus_url: http://prometheus.monitoring:9090
  register: gpu_health

- name: Node conditions only, on one pool, up to 4 new quarantines
  gpucloud.platform.gpu_health:
    node_selector: {platform.io/pool: main}
    unhealthy_conditions: [GpuUnhealthy, GpuDegraded]
    max_quarantine: 4

- name: What the run reads (nothing written)
  gpucloud.platform.gpu_health:
    prometheus_url: http://prometheus.monitoring:9090
    state: gathered
  register: health_facts

- name: The same run with a longer healthy period, planned offline
  gpucloud.platform.gpu_health:
    state: parsed
    healthy_period: 1h
    facts: "{{ health_facts.gathered }}"
"""

RETURN = r"""
quarantined:
  description: Nodes this run quarantined, each with C(node), C(reasons) and C(cordoned) (whether the run cordoned it).
  returned: always
  type: list
  elements: dict
  sample: [{node: gpu-node-7, reasons: [GPU 3 XID 79], cordoned: true}]
released:
  description: Nodes this run released, each with C(node), C(healthy_since) and C(uncordoned).
  returned: always
  type: list
  elements: dict
still_quarantined:
  description: Quarantined nodes kept in quarantine, each with C(node), C(reasons) (empty when healthy again), C(since)
    and C(healthy_since).
  returned: always
  type: list
  elements: dict
unhealthy:
  description: Every unhealthy node of O(node_selector) and why.
  returned: always
  type: dict
  sample: {gpu-node-7: [GPU 3 XID 79]}
jobs:
  description:
    - Each Volcano Job with pods on a quarantined node, with C(namespace), C(name), C(class), C(billing), C(tenant),
      C(queue), C(action) (C(delete), C(evict) or C(left running)), C(pods) and C(nodes).
  returned: always
  type: list
  elements: dict
unowned_pods:
  description: Pods on quarantined nodes left alone (no Volcano Job owns them, or their Job is gone), with why.
  returned: always
  type: list
  elements: str
disrupted:
  description: Per Queue, its C(platform.io/gpu-quarantine-disrupted-jobs) count C(before) and C(after) the run.
  returned: always
  type: dict
refused:
  description: The nodes a run refused to quarantine (rule quarantine-guard); empty on success.
  returned: always
  type: list
  elements: str
counts:
  description: How many nodes were unhealthy, quarantined, released, still quarantined, and jobs deleted, evicted, left
    running, and unowned pods.
  returned: always
  type: dict
read_at:
  description: When the Nodes were read (the run's time).
  returned: always
  type: str
diff:
  description: Per node written its taints, unschedulable and quarantine annotations, per stopped job its end.
  returned: when diff mode is on
  type: list
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - The nodes quarantined, released and still quarantined, and each job stopped or left running (in check mode,
      that would be).
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description: The objects the run reads, as read (without C(managedFields)), the Prometheus series, and C(read_at).
  returned: when O(state=gathered)
  type: dict
state:
  description: V(parsed) when the answer is a plan from O(facts); nothing was written.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health import service
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.quarantine import (
    DEFAULT_HEALTHY_PERIOD,
    DEFAULT_MAX_QUARANTINE,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.signals import (
    DEFAULT_FATAL_XIDS,
    DEFAULT_UNHEALTHY_CONDITIONS,
    DEFAULT_XID_WINDOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.summary import (
    health_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = dict(
    prometheus_url=dict(type="str"),
    timeout=dict(type="int", default=30),
    unhealthy_conditions=dict(
        type="list", elements="str", default=list(DEFAULT_UNHEALTHY_CONDITIONS)
    ),
    fatal_xids=dict(type="list", elements="int", default=list(DEFAULT_FATAL_XIDS)),
    xid_window=dict(type="str", default=DEFAULT_XID_WINDOW),
    max_quarantine=dict(type="int", default=DEFAULT_MAX_QUARANTINE),
    healthy_period=dict(type="str", default=DEFAULT_HEALTHY_PERIOD),
    node_selector=dict(type="dict", default={}),
    history_size=dict(type="int", default=50),
    state=dict(type="str", choices=["present", "gathered", "parsed"], default="present"),
    facts=dict(type="dict"),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.HEALTH_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=health_summary,
        diff_by_object=True,
    )


if __name__ == "__main__":
    main()
