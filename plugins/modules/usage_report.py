#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: usage_report
short_description: Bill each tenant's GPU-hours of a period - subscription, pay-as-you-go, spot - from Prometheus
version_added: 0.1.0
description:
  - "Bills what every GPU-second cost: from Prometheus, the platform's recording rules C(platform:tenant_billing_gpus:allocated)
    (labels C(tenant), C(billing_type), C(location)), C(platform:job_gpus:allocated) (spot jobs, the bid in
    C(spot_price)), C(platform:tenant_subscription_gpus:info) (each subscription's size over time) and
    C(platform:pod_gpus:unclaimed), over the period from O(start) to O(end); it writes a ledger per tenant and line."
  - "Billing follows the queue: the tenant and billing type of a GPU-second are those of the Volcano Queue its pod
    runs in (platform state), and only when the queue's tenant is the namespace's; no label a tenant writes on a Job
    or pod takes part."
  - "Exact integral: the module asks for C(sum_over_time(rule[step])), so every sample of the rules counts once, and
    each stands for the rules' evaluation interval, read from Prometheus (C(resolution_seconds) in the ledger). The
    step only slices the reading and never changes the bill. A pod counts from the first evaluation that sees it
    Running to the last: at most one scrape plus one evaluation interval per start and per stop."
  - "Subscription: prorated. Each size N (GPUs) the subscription had in the period includes N x the hours it had it
    (before the tenant existed, or after it was deleted, nothing); the amount is included x C(subscription.gpu_hour)
    + overage x C(subscription.overage_gpu_hour), the overage being the IDC subscription hours used beyond those
    included (never negative)."
  - "Pay-as-you-go: IDC hours x C(payg.gpu_hour). Spot: per job (and bid) IDC hours x the job's bid (the Job's
    C(platform.io/spot-price)); a missing bid counts as 0, as in a reclaim. Cloud: every GPU-hour on a node labelled
    C(platform.io/node-location=cloud), whatever the queue, x C(cloud.gpu_hour)."
  - "Reconciliation: the GPU-hours held in tenant namespaces by pods that no line claims (a pod outside its tenant's
    queues), per pod, in C(reconciliation); 0 on a healthy cluster, anything else is warned about naming the pods."
  - "Amounts are computed exactly (decimals) and written rounded half-up to cents, hours to 6 decimal places; every
    sum is the sum of the written values, so the ledger adds up. The same period gives the same ledger."
  - "Reads one list of Namespaces (label C(platform.io/tenant)), Prometheus's rule groups once, and per recording rule
    one query per 11,000 steps (Prometheus's limit per series). It never writes."
  - "With O(state=gathered) it returns what it read (the Namespaces, the rules' interval and Prometheus's series), and
    O(state=parsed) bills such O(facts) without connecting to the cluster or Prometheus: the same ledger, for the
    same O(start), O(end) and O(step) they were gathered for (other ones are refused, field C(facts.period));
    O(prometheus_url) (or O(members)) is still required and checked, but not asked."
  - "A federation's ledger (option O(members)): the connection is the Karmada API server. The module lists Karmada's
    C(Cluster) objects once (where each member is: C(platform.io/node-location) C(idc) or C(cloud)) and its
    Namespaces labelled C(platform.io/tenant) once (the federation's tenants), asks each member's Prometheus as it
    asks one cluster's, and bills one ledger (rule federation-ledger): every GPU-second of a cloud member is on
    the cloud line, whatever its node's label says; subscriptions are read from the IDC members only, each
    tenant's size counted once at a time, as a subscription is bought once for the federation. Every series in
    O(state=gathered) carries the C(member) it was read from and that member's C(location)."
options:
  prometheus_url:
    description:
      - The Prometheus base URL, for example C(http://prometheus.monitoring:9090); the module asks
        C(<prometheus_url>/api/v1/query_range).
      - "An unreachable Prometheus, an HTTP error or an answer whose C(status) is not C(success) fails the run, naming
        O(prometheus_url) and what happened."
      - Required unless O(members) is given; not with O(members).
    type: str
  members:
    description:
      - "A federation's ledger: each member cluster to bill, by its Karmada C(Cluster) name, with its own
        Prometheus base URL, for example C({idc-1: http://prometheus.idc-1:9090, cloud-1: http://prometheus.cloud-1:9090});
        the connection options then reach the Karmada API server. Members left out are not billed (a member's own
        part of the ledger is a report with that member alone)."
      - "A member Karmada does not have, one whose C(Cluster) is not labelled C(platform.io/node-location) C(idc) or
        C(cloud), and one whose metering rules are evaluated at another interval than the others are refused,
        each naming C(members.<name>); so is a member's Prometheus that does not answer with data."
      - Not with O(prometheus_url).
    type: dict
    version_added: 0.2.0
  start:
    description:
      - The period's start, an RFC 3339 date-time (a time without a zone is UTC), for example C(2026-01-01T00:00:00Z).
    type: str
    required: true
  end:
    description:
      - The period's end, after O(start), at most 366 days after it.
    type: str
    required: true
  step:
    description:
      - Seconds per slice the period is read in, 1 or more, no more than the period, and dividing it. It does not
        change the bill (every sample counts once, whatever the step); it only sets how many points each query
        returns.
      - Default the largest of 3600, 60 and 1 that divides the period.
    type: int
  tenants:
    description:
      - Only these tenants (and the reconciliation of their namespaces). Default is every tenant known on the cluster
        (a Namespace labelled C(platform.io/tenant)) or with a subscription or GPU use recorded in the period (a
        tenant deleted within the period is still billed).
      - A tenant that is none of these is refused (field C(tenants)), naming the known ones.
    type: list
    elements: str
  prices:
    description:
      - "The price table, per GPU-hour in O(currency): C(subscription) with C(gpu_hour) and C(overage_gpu_hour),
        C(payg) with C(gpu_hour), C(spot) with no keys (C({}); spot is billed at each job's bid), and C(cloud) with
        C(gpu_hour)."
      - "Prices are decimal numbers (strings keep them exact), 0 or more. A table without one of the four lines, with
        a key it does not know, or with a price that is negative or not a number is refused naming the key, for
        example C(prices.payg)."
    type: dict
    required: true
  currency:
    description:
      - The currency of the prices, written into the ledger (and every CSV line) when given, for example C(EUR).
    type: str
    default: ''
  timeout:
    description:
      - Seconds to wait for each Prometheus answer.
    type: int
    default: 30
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.read_states
attributes:
  diff_mode:
    support: N/A
    details: The module never writes.
notes:
  - "Prometheus must load the platform's rules (the monitoring role's PrometheusRule C(gpucloud-platform)) and
    kube-state-metrics export what they read (filter C(gpucloud.platform.kube_state_metrics_values))."
  - "A bill is as complete as Prometheus's retention: bill a period before it ages out."
seealso:
  - module: gpucloud.platform.tenant_info
  - module: gpucloud.platform.spot_info
"""

EXAMPLES = r"""
- name: Yesterday's usage, every tenant
  gpucloud.platform.usage_report:
    prometheus_url: http://prometheus.monitoring:9090
    start: "2026-01-01T00:00:00Z"
    end: "2026-01-02T00:00:00Z"
    currency: EUR
    prices:
      subscription: {gpu_hour: "2.00", overage_gpu_hour: "3.00"}
      payg: {gpu_hour: "3.50"}
      spot: {}
      cloud: {gpu_hour: "5.00"}
  register: usage

- name: Keep the CSV
  ansible.builtin.copy:
    content: "{{ usage.csv }}"
    dest: /var/lib/billing/usage-20260101.csv
    mode: "0640"

- name: One tenant's hour, read in minute slices (the bill is the same at any step)
  gpucloud.platform.usage_report:
    prometheus_url: http://127.0.0.1:29090
    start: "2026-01-01T12:00:00Z"
    end: "2026-01-01T13:00:00Z"
    step: 60
    tenants: [alpha]
    prices: "{{ metering_prices }}"
  register: alpha_usage

- name: One ledger for a federation (the connection is Karmada's API server), IDC and cloud apart
  gpucloud.platform.usage_report:
    members:
      idc-1: http://prometheus.idc-1.example:9090
      cloud-1: http://prometheus.cloud-1.example:9090
    start: "2026-01-01T00:00:00Z"
    end: "2026-01-02T00:00:00Z"
    prices: "{{ metering_prices }}"
  environment:
    K8S_AUTH_KUBECONFIG: /etc/karmada/karmada-apiserver.config
  register: federation_usage

- name: Keep what yesterday's bill is made from
  gpucloud.platform.usage_report:
    prometheus_url: http://prometheus.monitoring:9090
    start: "2026-01-01T00:00:00Z"
    end: "2026-01-02T00:00:00Z"
    prices: "{{ metering_prices }}"
    state: gathered
  register: usage_facts

- name: Bill it again at other prices, without connecting
  gpucloud.platform.usage_report:
    prometheus_url: http://prometheus.monitoring:9090
    start: "2026-01-01T00:00:00Z"
    end: "2026-01-02T00:00:00Z"
    prices: "{{ metering_prices_next_year }}"
    state: parsed
    facts: "{{ usage_facts.gathered }}"
  register: usage_what_if
"""

RETURN = r"""
ledger:
  description:
    - "The ledger: C(period) (C(start), C(end)), C(resolution_seconds) (the rules' evaluation interval), C(prices)
      (the table used), C(currency) (when given), C(rows), C(totals) and C(reconciliation). Every number is a decimal
      string."
    - "C(rows): four per tenant, sorted by tenant: subscription, payg, spot, cloud. Each has C(tenant),
      C(billing_type) (the line), C(gpu_hours) and C(amount); subscription rows C(sizes) (each size the
      subscription had: C(subscription_gpus), C(hours), C(included_gpu_hours)), C(included_gpu_hours),
      C(overage_gpu_hours), C(price), C(overage_price); payg and cloud rows C(price); spot rows C(jobs), one line
      per job and bid (C(job), C(namespace), C(gpu_hours), C(bid), C(amount))."
    - "C(totals): C(gpu_hours) and C(amount) of every row, C(by_billing_type) (per line: C(gpu_hours), C(amount))
      and C(by_tenant) (amounts)."
    - "C(reconciliation): C(unclaimed_gpu_hours) and C(pods) (C(namespace), C(pod), C(gpu_hours)) that held GPUs
      in tenant namespaces on no line."
  returned: success, except with O(state=gathered)
  type: dict
  sample:
    period: {start: "2026-01-01T00:00:00Z", end: "2026-01-02T00:00:00Z"}
    resolution_seconds: "30"
    prices:
      subscription: {gpu_hour: "2.00", overage_gpu_hour: "3.00"}
      payg: {gpu_hour: "3.50"}
      spot: {}
      cloud: {gpu_hour: "5.00"}
    currency: EUR
    rows:
      - tenant: alpha
        billing_type: subscription
        gpu_hours: "400.000000"
        sizes:
          - {subscription_gpus: "8", hours: "12.000000", included_gpu_hours: "96.000000"}
          - {subscription_gpus: "16", hours: "12.000000", included_gpu_hours: "192.000000"}
        included_gpu_hours: "288.000000"
        overage_gpu_hours: "112.000000"
        price: "2.00"
        overage_price: "3.00"
        amount: "912.00"
      - {tenant: alpha, billing_type: payg, gpu_hours: "10.000000", price: "3.50", amount: "35.00"}
      - tenant: alpha
        billing_type: spot
        gpu_hours: "2.000000"
        jobs:
          - {job: cheap, namespace: tenant-alpha, gpu_hours: "2.000000", bid: "0.5", amount: "1.00"}
        amount: "1.00"
      - {tenant: alpha, billing_type: cloud, gpu_hours: "4.000000", price: "5.00", amount: "20.00"}
    totals:
      gpu_hours: "416.000000"
      amount: "968.00"
      by_billing_type:
        subscription: {gpu_hours: "400.000000", amount: "912.00"}
        payg: {gpu_hours: "10.000000", amount: "35.00"}
        spot: {gpu_hours: "2.000000", amount: "1.00"}
        cloud: {gpu_hours: "4.000000", amount: "20.00"}
      by_tenant: {alpha: "968.00"}
    reconciliation: {unclaimed_gpu_hours: "0.000000", pods: []}
csv:
  description:
    - "The ledger as CSV with a header: columns C(kind), C(tenant), C(billing_type), C(namespace), C(job),
      C(gpu_hours), C(subscription_gpus), C(hours), C(included_gpu_hours), C(overage_gpu_hours), C(price),
      C(overage_price), C(amount), C(currency)."
    - "A C(usage) line per row, each subscription row followed by a C(subscription_size) line per size and each spot
      row by a C(spot_job) line per job (its bid as C(price)); those are already in their row's amount, so sum the
      C(usage) lines."
  returned: success, except with O(state=gathered)
  type: str
  sample: |
    kind,tenant,billing_type,namespace,job,gpu_hours,subscription_gpus,hours,included_gpu_hours,overage_gpu_hours,price,overage_price,amount,currency
    usage,alpha,payg,,,10.000000,,,,,3.50,,35.00,EUR
summary:
  description: The ledger in a few lines a person reads (period, totals per line, per tenant, reconciliation; with O(members), the members read).
  returned: success
  type: list
  elements: str
  sample:
    - period 2026-01-01T00:00:00Z - 2026-01-02T00:00:00Z, resolution 30 s, 1 tenants
    - "total 968.00 EUR: subscription 912.00 (400.000000 GPU-h), payg 35.00 (10.000000 GPU-h), spot 1.00 (2.000000 GPU-h), cloud 20.00 (4.000000 GPU-h)"
    - "  alpha  968.00 EUR"
    - "reconciliation: 0.000000 GPU-h held in tenant namespaces on no line"
queries:
  description: How many Prometheus requests the run made (the rule groups and each query window).
  returned: success, except with O(state=gathered) and O(state=parsed)
  type: int
  sample: 5
prometheus_url:
  description: O(prometheus_url), or the member's Prometheus URL, when Prometheus could not be asked or did not answer with data.
  returned: failure
  type: str
member:
  description: With O(members), the member whose Prometheus could not be asked or did not answer with data.
  returned: failure
  type: str
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
gathered:
  description:
    - "With O(state=gathered), what the ledger is billed from: C(period) (C(start), C(end), C(step)), C(namespaces)
      (the tenants' Namespaces by name and labels), C(resolution_seconds) (the rules' interval), and the series
      Prometheus answered for each recording rule - C(tenant_billing), C(spot_jobs), C(subscription_sizes) and
      C(unclaimed)."
    - "With O(members): the federation's facts, merged (rule federation-ledger): Karmada's Namespaces, and every
      member's series, each labelled with its C(member) and that member's C(location); the subscription sizes only
      from the IDC members, once. O(state=parsed) bills them as it bills one cluster's."
  returned: when O(state=gathered)
  type: dict
  sample:
    period: {start: "2026-01-01T00:00:00Z", end: "2026-01-02T00:00:00Z", step: 3600}
    namespaces: [{metadata: {name: tenant-alpha, labels: {platform.io/tenant: alpha}}}]
    resolution_seconds: "30"
    tenant_billing:
      - metric: {tenant: alpha, billing_type: payg, location: idc}
        values: [[1767229200, "240"]]
    spot_jobs: []
    subscription_sizes: []
    unclaimed: []
state:
  description: The offline state answered (V(parsed)); nothing was read.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made (0 with V(parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.ledger_io import (
    FEDERATION_REPORT_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import READ_STATE_OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.report import (
    report_summary,
)

OPTIONS = {
    "prometheus_url": {"type": "str"},
    "members": {"type": "dict"},
    "start": {"type": "str", "required": True},
    "end": {"type": "str", "required": True},
    "step": {"type": "int"},
    "tenants": {"type": "list", "elements": "str"},
    "prices": {"type": "dict", "required": True},
    "currency": {"type": "str", "default": ""},
    "timeout": {"type": "int", "default": 30},
    **READ_STATE_OPTIONS,
}


def main() -> None:
    run_flow(
        OPTIONS,
        FEDERATION_REPORT_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=report_summary,
    )


if __name__ == "__main__":
    main()
