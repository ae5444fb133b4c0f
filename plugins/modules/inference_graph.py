#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: inference_graph
short_description: An A/B test between a tenant's model services, as a KServe InferenceGraph Splitter
version_added: 0.1.0
description:
  - "The graph C(<tenant>-<name>) in O(namespace), the serving gateway's namespace, has one Splitter node that sends
    each request to one of O(routes) by weight (rule inference-ab-test). Each route is a model service of the tenant
    (gpucloud.platform.inference_service), reached at the address KServe reports for it."
  - "The graph lives with the gateway, not in the tenant's namespace: KServe's router Deployment has no scheduler or
    PriorityClass field to give its pods, so the tenant's admission policies (every pod through Volcano) would refuse
    it there (docs/design-differences.md). The services admit the gateway's namespace already."
  - "Refused before any write: weights that do not add up to 100, a service named twice, one that is not the
    tenant's, and one that has no address yet."
options:
  name:
    description:
      - The A/B test's name (the graph is C(<tenant>-<name>)).
      - "A live graph of that name that is another tenant's (tenant C(pa)'s C(b-x) is tenant C(pa-b)'s C(x)) or not
        the platform's is neither replaced nor deleted: the run is refused (rule graph-of-own-tenant)."
    type: str
    required: true
  tenant:
    description: The tenant whose services it splits between.
    type: str
    required: true
  state:
    description:
      - C(present) makes or changes the graph; C(absent) removes it.
      - C(gathered) reads what the run judges by and returns it as RV(gathered), writing nothing.
      - "C(parsed) answers as C(present) (or says what it would write) from O(facts), without connecting: the
        graph another cluster would get, reviewed offline."
    type: str
    choices: [present, absent, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), what O(state=gathered) returned (its RV(gathered)).
    type: dict
  routes:
    description: Two or more C({service, weight}); the weights add up to 100. Required with O(state=present).
    type: list
    elements: dict
  namespace:
    description: The serving gateway's namespace, where the graph and its router run.
    type: str
    default: platform-serving
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
seealso:
  - module: gpucloud.platform.inference_service
  - module: gpucloud.platform.inference_service_info
"""

EXAMPLES = r"""
- name: Half of the requests to llm, half to llm-distilled
  gpucloud.platform.inference_graph:
    name: llm-ab
    tenant: alpha
    routes:
      - {service: llm, weight: 50}
      - {service: llm-distilled, weight: 50}

- name: Read what the graph is judged by
  gpucloud.platform.inference_graph:
    name: llm-ab
    tenant: alpha
    state: gathered
  register: graph_facts

- name: The graph those facts give, without connecting
  gpucloud.platform.inference_graph:
    name: llm-ab
    tenant: alpha
    state: parsed
    facts: "{{ graph_facts.gathered }}"
    routes:
      - {service: llm, weight: 50}
      - {service: llm-distilled, weight: 50}
"""

RETURN = r"""
graph:
  description: The InferenceGraph's name.
  returned: always
  type: str
  sample: alpha-llm-ab
writes:
  description: The objects written or deleted.
  returned: always
  type: list
  elements: str
diff:
  description: The routes before and after.
  returned: in diff mode
  type: dict
changed:
  description: Whether anything was written (in check mode, would be).
  returned: always
  type: bool
gathered:
  description:
    - With O(state=gathered), the facts the run judges by, for O(facts) of O(state=parsed).
    - "C(inferencegraphs): the live graph of that name (none or one); C(inferenceservices) and C(networkpolicies):
      the tenant's model services and their NetworkPolicies."
  returned: when O(state=gathered)
  type: dict
state:
  description: The offline state answered, C(parsed).
  returned: when O(state=parsed)
  type: str
summary:
  description: What the run did (in check mode or with O(state=parsed), would do) to the graph, and its routes.
  returned: always
  type: list
  elements: str
  sample: ["A/B graph alpha-llm-ab: written; routes llm 50%, llm-distilled 50%"]
requests:
  description: How many API requests the run made.
  returned: always
  type: int
done:
  description: The writes made before a failed one.
  returned: on a failure part-way
  type: list
  elements: str
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.inputs import (
    GRAPH_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.summary import (
    graph_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = GRAPH_OPTIONS


def main() -> None:
    run_flow(OPTIONS, service.GRAPH_FLOW, summary=graph_summary)


if __name__ == "__main__":
    main()
