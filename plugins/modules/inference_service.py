#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: inference_service
short_description: Deploy a tenant's model on KServe, in its queue, and roll it out by canary
version_added: 0.1.0
description:
  - "A model service is one KServe InferenceService in C(tenant-<tenant>) (docs/inference.md). Its stable predictor
    serves one version (the C(version) of O(model) and the C(storage_uri) it stands for); each of O(canaries) serves
    another version at a share of the traffic. A version's name is KServe's C(predictor.name), so its Deployment is
    C(<name>-<version>-predictor) and promoting a canary keeps its pods running."
  - "Tenant placement (rule inference-placement): the predictor pods are scheduled by Volcano in O(queue), at the
    PriorityClass of O(job_class), marked C(volcano.sh/preemptable: \"false\") at critical, with no topology
    constraint, and labelled with the tenant, class and billing type the metering rules read. O(job_class) defaults
    to C(critical) in a subscription team queue (design 5.3) and C(normal) otherwise; never to C(spot): in a spot
    queue say O(job_class=spot) and give O(spot_price) (rule inference-spot-priced). A spot service's pods are
    reclaimed, cheapest first, whenever paying demand needs their GPUs (rule spot-candidate-pod); its Deployment
    makes them again, Pending until idle GPUs return."
  - "The rollout actions start from what runs: C(canary) adds or changes canaries, C(step) sets the canaries'
    traffic (O(traffic)), C(promote) makes a canary the stable version, C(rollback) drops the canaries or, with
    none, returns to the previous version. The service's versions are kept on it (annotation
    C(platform.io/model-versions))."
  - "In a subscription team queue of a tenant the platform has not allowed critical work (namespace label
    C(platform.io/allow-critical)), the default class is C(normal)."
  - "A NetworkPolicy admits O(gateway_namespaces) on O(serving_port) and O(monitoring_namespace) on O(metrics_port)
    to the service's predictor pods alone (rule inference-reachable)."
  - "Refused before any write, each naming the field: canary traffic over 100, a canary version named twice or like
    the stable one, a canary min_replicas above the stable one, a version whose storage_uri changed under the same
    name, GPUs at the service's minimum beyond the queue's capability, a class the queue type does not allow, and
    a queue that is not the tenant's."
  - "O(mode=knative) renders KServe's Knative (Serverless) shape: the predictor declares the newest version and
    C(canaryTrafficPercent) its share. It needs Knative Serving in the cluster."
options:
  name:
    description:
      - The service (the InferenceService's name).
      - "Its canary router is the InferenceGraph C(<tenant>-<name>-canary); when a graph of that name is another
        tenant's or not the platform's, the run is refused before any write (rule graph-of-own-tenant)."
    type: str
    required: true
  tenant:
    description: The tenant whose namespace holds the service.
    type: str
    required: true
  state:
    description:
      - C(present) deploys or changes the service; C(absent) removes it, its HPA and its NetworkPolicy.
      - C(gathered) reads what a C(present) run with the same options judges the service by and returns it as
        RV(gathered), writing nothing.
      - "C(parsed) answers as C(present) in check mode from O(facts), without connecting: the change another
        cluster would get, reviewed offline. It writes and waits for nothing."
    type: str
    choices: [present, absent, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), what O(state=gathered) returned (its RV(gathered)).
    type: dict
  action:
    description:
      - C(deploy) makes the service match O(model), O(canaries) and O(autoscaling).
      - C(canary) adds O(canaries) to the live service, or changes those of the same version; the stable version stays.
      - C(step) sets the traffic of live canaries to O(traffic).
      - C(promote) makes the canary O(version) (or the only one) the stable version.
      - C(rollback) drops the canary O(version) (or all), or, with no canary, returns to the previous version.
    type: str
    choices: [deploy, canary, step, promote, rollback]
    default: deploy
  queue:
    description:
      - One of the tenant's leaf queues. Required with O(action=deploy); the other actions keep the live one.
      - "Rule leaf-queue-of-tenant: C(root), C(default), the tenant's subscription queue with team queues under it,
        another tenant's queue or none is refused before any write, naming what it is."
    type: str
  job_class:
    description: The class the pods run at; by default from the queue's type (see above).
    type: str
    choices: [critical, normal, spot]
  spot_price:
    description:
      - The bid per GPU-hour of a C(spot) service, for example C('0.3') (greater than 0, at most 6 decimal places;
        rule spot-price). Required with O(job_class=spot), refused with any other class. Each predictor pod carries
        it (annotation C(platform.io/spot-price)); spot reclaim takes the cheapest pods first. The rollout actions
        keep the live one.
    type: raw
  mode:
    description: KServe's deployment mode.
    type: str
    choices: [standard, knative]
    default: standard
  model:
    description:
      - The stable version, with keys C(version) (a DNS label of up to 20 characters), C(format) (for example
        C(vllm)), C(storage_uri), C(runtime), C(gpus), C(cpu), C(memory) and C(args).
      - Required with O(action=deploy).
    type: dict
  canaries:
    description:
      - Canary versions, each with the keys of O(model) (format, runtime and resources default to the stable
        version's), C(traffic_percent) and C(min_replicas).
    type: list
    elements: dict
    default: []
  autoscaling:
    description:
      - C(min_replicas) (default 1), C(max_replicas), C(scale_metric) (cpu, memory, concurrency, rps) and
        C(scale_target) for KServe's own autoscaler.
      - C(gpu_util_target) instead makes the design's HPA on C(DCGM_FI_DEV_GPU_UTIL) (needs C(max_replicas) and a
        custom metrics API serving it; docs/inference.md).
    type: dict
  service_account:
    description:
      - "The ServiceAccount the predictor pods run as (the predictor's C(serviceAccountName), the canaries' and in
        O(mode=knative) the one predictor's too), one of the tenant's namespace. Without it they run as the
        namespace's C(default) ServiceAccount."
      - "A DNS-1123 subdomain; anything else is refused before anything is read, naming the option (rule
        inference-pod-identity)."
      - Declared by O(action=deploy); the rollout actions keep the live one.
    type: str
  image_pull_secrets:
    description:
      - "Secrets of the tenant's namespace the predictor pods pull their images with (the predictor's
        C(imagePullSecrets), the canaries' too, in the order given), for a runtime image in a private registry."
      - "A list of DNS-1123 subdomains, each named once; anything else is refused before anything is read, naming
        the option and the entry (rule inference-pod-identity)."
      - Declared by O(action=deploy); the rollout actions keep the live ones.
    type: list
    elements: str
    default: []
  traffic:
    description: "With O(action=step), the canaries' new shares, for example C({v2: 40})."
    type: dict
  version:
    description: With O(action=promote) or O(action=rollback), the canary it is about.
    type: str
  gateway_namespaces:
    description:
      - Namespaces whose pods may send requests to the service (the serving gateway's, the A/B routers').
      - "A tenant namespace (C(tenant-...)) or a control namespace (C(kube-system), C(kube-public),
        C(kube-node-lease), C(platform-system), C(volcano-system)) is refused before anything is read (rule
        serving-peer-namespace)."
    type: list
    elements: str
    default: [platform-serving]
  monitoring_namespace:
    description:
      - The namespace that may scrape the predictors' metrics.
      - Never a tenant namespace or a control namespace, as for O(gateway_namespaces) (rule serving-peer-namespace).
    type: str
    default: monitoring
  serving_port:
    description: The predictors' serving port, 1 to 65535 (rule inference-ports).
    type: int
    default: 8080
  metrics_port:
    description: The predictors' metrics port, 1 to 65535 (rule inference-ports).
    type: int
    default: 8080
  wait:
    description: Wait until the service is Ready at the new stable version with every canary ready (not in check mode).
    type: bool
    default: false
  wait_timeout:
    description: How long O(wait) waits, in seconds.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between checks while waiting.
    type: int
    default: 2
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
seealso:
  - module: gpucloud.platform.inference_service_info
  - module: gpucloud.platform.inference_graph
"""

EXAMPLES = r"""
- name: First version of a model, critical inference in team research's queue
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    queue: tenant-alpha-research
    model:
      version: v1
      format: vllm
      runtime: kserve-vllm
      storage_uri: s3://models/llama2-70b/v1
      gpus: 4
    autoscaling:
      min_replicas: 2
      max_replicas: 8
      gpu_util_target: 70
    wait: true

- name: A model whose runtime image is in a private registry, run as the tenant's own ServiceAccount
  gpucloud.platform.inference_service:
    name: embed
    tenant: alpha
    queue: tenant-alpha-research
    model:
      version: v1
      format: huggingface
      runtime: alpha-embeddings
      storage_uri: s3://models/embed/v1
      gpus: 1
    service_account: model-reader
    image_pull_secrets: [alpha-registry]

- name: Version v2 as a canary at 20 % (format, runtime and GPUs as v1's)
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    action: canary
    canaries:
      - {version: v2, storage_uri: s3://models/llama2-70b/v2, traffic_percent: 20}

- name: Step the canary to 50 %
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    action: step
    traffic: {v2: 50}

- name: Promote v2
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    action: promote

- name: Back to v1
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    action: rollback

- name: Read what a canary step is judged by
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    action: step
    traffic: {v2: 50}
    state: gathered
  register: llm_facts

- name: What the step would write, from those facts, without connecting
  gpucloud.platform.inference_service:
    name: llm
    tenant: alpha
    action: step
    traffic: {v2: 50}
    state: parsed
    facts: "{{ llm_facts.gathered }}"
"""

RETURN = r"""
service:
  description: The service after the run - C(name), C(namespace), C(queue), C(job_class), C(billing_type),
    C(current_version), C(deployment) (the stable Deployment) and C(traffic) (version to percent).
  returned: success
  type: dict
status:
  description: With O(wait), what gpucloud.platform.inference_service_info reports once it is Ready, plus
    C(waited_seconds).
  returned: when waited
  type: dict
writes:
  description: The objects written or deleted (C(Kind/namespace/name)), in order.
  returned: always
  type: list
  elements: str
diff:
  description: The service's versions, canaries, traffic, queue, class and autoscaling before and after.
  returned: in diff mode
  type: dict
changed:
  description: Whether anything was written (in check mode, would be).
  returned: always
  type: bool
summary:
  description:
    - What the run did to the service (in check mode, would do), its version, queue and traffic split.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description:
    - With O(state=gathered), the facts the run judges by, for O(facts) of O(state=parsed); a kind the run did
      not need (it refused first) is left out.
    - "C(inferenceservices), C(horizontalpodautoscalers), C(networkpolicies) and C(inferencegraphs): the service, its
      GPU-utilisation HPA, its NetworkPolicy and its canary router (none or one each); C(configmaps) and
      C(namespaces): the tenant's queue list and Namespace; C(queues): the service's queue and its ancestors up to
      root; C(graphs): the tenant's InferenceGraphs in the first O(gateway_namespaces), the A/B tests a new stable
      version re-routes."
  returned: when O(state=gathered)
  type: dict
state:
  description: The offline state answered, C(parsed).
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
done:
  description: The writes made before a failed one (every write is idempotent, so running again finishes the change).
  returned: on a failure part-way
  type: list
  elements: str
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.inputs import (
    SERVICE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.summary import (
    service_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = SERVICE_OPTIONS


def main() -> None:
    run_flow(OPTIONS, service.SERVICE_FLOW, summary=service_summary)


if __name__ == "__main__":
    main()
