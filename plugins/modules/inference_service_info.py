#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: inference_service_info
short_description: Report a tenant's model services - readiness, URL, versions, canaries and traffic split
version_added: 0.1.0
description:
  - "One LIST per kind: the InferenceServices and HPAs the collection manages (of O(tenant), or of every tenant), and
    the A/B InferenceGraphs in O(serving_namespace)."
  - "With O(state=gathered) it returns what it read, and O(state=parsed) reports from such O(facts) without
    connecting (only O(tenant)'s services, and O(name), when they hold more)."
  - "For each service: its readiness conditions, URL and cluster address, the current and previous versions and the
    whole history, each canary's version, traffic share and readiness, and the traffic split."
options:
  tenant:
    description: Only this tenant's services; all tenants when left out.
    type: str
  name:
    description: Only this service.
    type: str
  serving_namespace:
    description: Where the A/B InferenceGraphs live.
    type: str
    default: platform-serving
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.read_states
seealso:
  - module: gpucloud.platform.inference_service
"""

EXAMPLES = r"""
- name: Where is llm's rollout?
  gpucloud.platform.inference_service_info:
    tenant: alpha
    name: llm
  register: llm

- name: Show the versions, their ready/desired replicas and the split
  ansible.builtin.debug:
    msg: "{{ llm.summary }}"

- name: The split as data
  ansible.builtin.debug:
    msg: "{{ llm.services[0].traffic }}"

- name: Keep what the report is made from
  gpucloud.platform.inference_service_info:
    tenant: alpha
    state: gathered
  register: alpha_serving

- name: Report alpha's llm from it later, without connecting
  gpucloud.platform.inference_service_info:
    tenant: alpha
    name: llm
    state: parsed
    facts: "{{ alpha_serving.gathered }}"
"""

RETURN = r"""
services:
  description:
    - One entry per service - C(name), C(namespace), C(mode), C(ready), C(conditions) (type to status, reason and
      message), C(url), C(address), C(current_version), C(previous_version), C(versions) (oldest first),
      C(storage_uri), C(queue), C(job_class), C(canaries) (C(version), C(storage_uri), C(traffic_percent), C(ready),
      C(deployment)), C(traffic) (version to percent), C(deployment), C(autoscaler_class) and C(gpu_util_target).
    - "C(replicas): per version, C(ready) and C(desired) replicas of its predictor Deployment and the C(minimum) the
      service keeps (rule inference-replicas-reported). A service with a version below its minimum is not C(ready),
      whatever KServe's condition says, and C(below_minimum) names those versions."
  returned: unless O(state=gathered)
  type: list
  elements: dict
graphs:
  description: The tenant's A/B InferenceGraphs - C(name), C(ready), C(conditions), C(url), C(router) and C(routes)
    (C(service), C(url), C(weight)).
  returned: unless O(state=gathered)
  type: list
  elements: dict
summary:
  description:
    - The services in a few lines a person reads (rule run-summary) - a headline, then one row per version of each
      service (the current one, then its canaries) with its ready/desired replicas, the minimum the service keeps
      and its share of the traffic, then one line per A/B InferenceGraph.
  returned: always
  type: list
  elements: str
  sample:
    - 1 inference service(s), 1 ready; REPLICAS as ready/desired
    - "SERVICE           READY  VERSION  ROLE     REPLICAS  MIN  TRAFFIC"
    - "tenant-alpha/llm  yes    v2       current       2/2    1      90%"
    - "tenant-alpha/llm  yes    v3       canary        1/1    1      10%"
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
gathered:
  description:
    - With O(state=gathered), the InferenceServices, their HPAs, KServe's predictor Deployments and the
      InferenceGraphs the report reads, with only the fields it reads.
  returned: when O(state=gathered)
  type: dict
  sample:
    services: [{metadata: {name: llm, namespace: tenant-alpha, labels: {platform.io/tenant: alpha}}, spec: {}}]
    hpas: []
    predictors:
      - metadata: {name: llm-v1-predictor, namespace: tenant-alpha}
        spec: {replicas: 1}
        status: {readyReplicas: 1}
    graphs: []
state:
  description: The offline state answered (V(parsed)); nothing was read.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made (0 with V(parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.info_summary import (
    info_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.inputs import INFO_OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import READ_STATE_OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = {
    **INFO_OPTIONS,
    **READ_STATE_OPTIONS,
}


def main() -> None:
    run_flow(
        OPTIONS,
        service.INFO_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=info_summary,
    )


if __name__ == "__main__":
    main()
