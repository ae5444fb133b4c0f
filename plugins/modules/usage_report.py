#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: usage_report
short_description: Bill each tenant's GPU-hours of a period - subscription, pay-as-you-go, spot - from Prometheus
version_added: 0.1.0
description:
  - "Reads the platform's recording rules C(platform:tenant_billing_gpus:allocated) (labels C(tenant),
    C(billing_type)) and C(platform:job_gpus:allocated) (spot jobs, with the bid in label C(spot_price)) from
    Prometheus with C(query_range) over the period from O(start) to O(end), O(step) seconds apart, and writes a
    ledger: per tenant and billing type the GPU-hours and the amount."
  - "GPU-hours integrate the samples: each sample stands for the O(step) that ends at it, so it adds value x step /
    3600 GPU-hours, and the period counts the samples after O(start) up to and including O(end)."
  - "Subscription: the subscription of N GPUs (the GPUs of C(spec.capability) of the tenant's Queue labelled
    C(platform.io/queue-type=subscription), as it is when the report runs) includes N x the period's hours; the
    amount is included x C(subscription.gpu_hour) + overage x C(subscription.overage_gpu_hour), the overage being the
    hours used beyond those included (never negative)."
  - "Pay-as-you-go: hours x C(payg.gpu_hour). Spot: per job (and bid) hours x the job's bid; a missing bid counts as
    0, as in a reclaim."
  - "Amounts are computed exactly (decimals) and written rounded half-up to cents, hours to 6 decimal places; every
    sum is the sum of the written values, so the ledger adds up."
  - "Reads one list of Namespaces (label C(platform.io/tenant)), one of subscription Queues, and per recording rule
    one query per 11,000 steps (Prometheus's limit per series). It never writes."
options:
  prometheus_url:
    description:
      - The Prometheus base URL, for example C(http://prometheus.monitoring:9090); the module asks
        C(<prometheus_url>/api/v1/query_range).
      - "An unreachable Prometheus, an HTTP error or an answer whose C(status) is not C(success) fails the run, naming
        O(prometheus_url) and what happened."
    type: str
    required: true
  start:
    description:
      - The period's start, an RFC 3339 date-time (a time without a zone is UTC), for example C(2026-01-01T00:00:00Z).
    type: str
    required: true
  end:
    description:
      - The period's end, after O(start). The period is a whole number of O(step)s.
    type: str
    required: true
  step:
    description:
      - Seconds between samples, 1 or more, no more than the period, and dividing it (otherwise its last part-step
        would not be counted).
      - A step below the recording rules' evaluation interval reads the same sample more than once, which still
        integrates right; a much larger one misses jobs shorter than it.
    type: int
    default: 60
  tenants:
    description:
      - Only these tenants. Default is every tenant known on the cluster (a Namespace labelled
        C(platform.io/tenant) or a subscription Queue) or with GPU use recorded in the period (a tenant deleted
        within the period is still billed).
      - A tenant that is none of these is refused (field C(tenants)), naming the known ones.
    type: list
    elements: str
  prices:
    description:
      - "The price table, per GPU-hour in O(currency): C(subscription) with C(gpu_hour) and C(overage_gpu_hour),
        C(payg) with C(gpu_hour), and C(spot) with no keys (C({}); spot is billed at each job's bid)."
      - "Prices are decimal numbers (strings keep them exact), 0 or more. A table without one of the three billing
        types, with a key it does not know, or with a price that is negative or not a number is refused naming the
        key, for example C(prices.payg)."
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
attributes:
  diff_mode:
    support: N/A
    details: The module never writes.
notes:
  - "The subscription size is the one on the cluster when the report runs; a subscription resized within the period
    is billed at its present size for the whole period."
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
  register: usage

- name: Keep the CSV
  ansible.builtin.copy:
    content: "{{ usage.csv }}"
    dest: /var/lib/billing/usage-20260101.csv
    mode: "0640"

- name: One tenant's hour, sampled every 5 seconds
  gpucloud.platform.usage_report:
    prometheus_url: http://127.0.0.1:29090
    start: "2026-01-01T12:00:00Z"
    end: "2026-01-01T13:00:00Z"
    step: 5
    tenants: [alpha]
    prices: "{{ metering_prices }}"
  register: alpha_usage
"""

RETURN = r"""
ledger:
  description:
    - "The ledger: C(period) (C(start), C(end), C(step)), C(prices) (the table used), C(currency) (when given),
      C(rows) and C(totals). Every number is a decimal string."
    - "C(rows): three per tenant, sorted by tenant, subscription, payg, spot. Each has C(tenant), C(billing_type),
      C(gpu_hours) and C(amount); subscription rows C(subscription_gpus), C(included_gpu_hours),
      C(overage_gpu_hours), C(price), C(overage_price); payg rows C(price); spot rows C(jobs), one line per job and bid
      (C(job), C(namespace), C(gpu_hours), C(bid), C(amount))."
    - "C(totals): C(gpu_hours) and C(amount) of every row, C(by_billing_type) (each C(gpu_hours), C(amount)) and
      C(by_tenant) (amounts)."
  returned: success
  type: dict
  sample:
    period: {start: "2026-01-01T00:00:00Z", end: "2026-01-02T00:00:00Z", step: 60}
    prices:
      subscription: {gpu_hour: "2.00", overage_gpu_hour: "3.00"}
      payg: {gpu_hour: "3.50"}
      spot: {}
    currency: EUR
    rows:
      - tenant: alpha
        billing_type: subscription
        gpu_hours: "400.000000"
        subscription_gpus: "16"
        included_gpu_hours: "384.000000"
        overage_gpu_hours: "16.000000"
        price: "2.00"
        overage_price: "3.00"
        amount: "816.00"
      - {tenant: alpha, billing_type: payg, gpu_hours: "10.000000", price: "3.50", amount: "35.00"}
      - tenant: alpha
        billing_type: spot
        gpu_hours: "2.000000"
        jobs:
          - {job: cheap, namespace: tenant-alpha, gpu_hours: "2.000000", bid: "0.5", amount: "1.00"}
        amount: "1.00"
    totals:
      gpu_hours: "412.000000"
      amount: "852.00"
      by_billing_type:
        subscription: {gpu_hours: "400.000000", amount: "816.00"}
        payg: {gpu_hours: "10.000000", amount: "35.00"}
        spot: {gpu_hours: "2.000000", amount: "1.00"}
      by_tenant: {alpha: "852.00"}
csv:
  description:
    - "The ledger as CSV with a header: columns C(kind), C(tenant), C(billing_type), C(namespace), C(job),
      C(gpu_hours), C(subscription_gpus), C(included_gpu_hours), C(overage_gpu_hours), C(price), C(overage_price),
      C(amount), C(currency)."
    - "A C(usage) line per row, each spot row followed by a C(spot_job) line per job (its bid as C(price)); the
      C(spot_job) amounts are already in their spot row's, so sum the C(usage) lines."
  returned: success
  type: str
  sample: |
    kind,tenant,billing_type,namespace,job,gpu_hours,subscription_gpus,included_gpu_hours,overage_gpu_hours,price,overage_price,amount,currency
    usage,alpha,payg,,,10.000000,,,,3.50,,35.00,EUR
queries:
  description: How many Prometheus queries the run made.
  returned: success
  type: int
  sample: 2
prometheus_url:
  description: O(prometheus_url), when Prometheus could not be asked or did not answer with data.
  returned: failure
  type: str
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_module
from ansible_collections.gpucloud.platform.plugins.module_utils.metering import service
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.inputs import (
    parse_report,
)

OPTIONS = {
    "prometheus_url": {"type": "str", "required": True},
    "start": {"type": "str", "required": True},
    "end": {"type": "str", "required": True},
    "step": {"type": "int", "default": 60},
    "tenants": {"type": "list", "elements": "str"},
    "prices": {"type": "dict", "required": True},
    "currency": {"type": "str", "default": ""},
    "timeout": {"type": "int", "default": 30},
}


def main() -> None:
    run_module(OPTIONS, service.run, validate=parse_report)


if __name__ == "__main__":
    main()
