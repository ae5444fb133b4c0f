#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: dataset
short_description: Stage a tenant's dataset version, publish it read-only, or remove it
version_added: 0.1.0
description:
  - "A dataset version lives in the tenant's namespace (docs/object-store.md#datasets)."
  - "O(state=present) stages it: a writable claim C(dataset-<name>-<version>-staging) of O(size), and with O(source)
    an ingest job that fills it at C(/data): C(aws s3 sync) from an C(s3://) prefix with the tenant's own keys (its
    object store's Secret), or a download of one URL (rule dataset-ingest). The job is a Volcano Job in the tenant's
    pay-as-you-go queue with no GPU."
  - "O(state=published) publishes it once the staging claim is bound and the ingest job has completed: the staging
    volume is kept (reclaim policy Retain), its storage is offered read-only (ReadOnlyMany) as volume
    C(tenant-<tenant>-dataset-<name>-<version>) reserved for claim C(dataset-<name>-<version>) (rule
    dataset-published-readonly), then the ingest job and the staging claim go. The data is never copied. Jobs mount the
    published claim (gpucloud.platform.vcjob O(gpucloud.platform.vcjob#module:dataset))."
  - "O(state=absent) removes the version's claims, published volume and ingest job; refused while an unfinished pod
    mounts one of its claims, unless O(force) (rule dataset-in-use). The storage is retained."
  - "With O(cache), a published version is also cached in the IDC by Fluid (docs/object-store.md#the-cache): a
    Fluid C(Dataset) (C(data.fluid.io/v1alpha1)) named C(cache-<name>-<version>) mounts the S3 prefix of O(source)
    read-only (ReadOnlyMany) with the tenant's keys and the store's endpoint from its Secret C(platform-object-store)
    (C(encryptOptions); rule dataset-cache-mount), and an C(AlluxioRuntime) of the same name holds the cache (rule
    dataset-cache-tier). Both are made when missing and applied again when they differ from O(cache). Fluid must be
    installed (role gpucloud.platform.fluid); the cache is refused with O(state=present) and without an S3 source
    (rule dataset-cache-source). O(state=absent) removes them too, after the same guard (a pod mounting Fluid's
    claim C(cache-<name>-<version>) counts)."
  - "A published version is not staged again: a new version is."
  - "Writes only what is missing; in check mode the writes are the API server's dry runs."
options:
  tenant:
    description: The tenant.
    type: str
    required: true
  name:
    description: The dataset, a DNS label.
    type: str
    required: true
  version:
    description: The version, a DNS label (for example C(v1) or C(2026-12)).
    type: str
    required: true
  state:
    description: C(present) stages the version, C(published) publishes it read-only, C(absent) removes it.
    type: str
    choices: [present, published, absent]
    default: present
  size:
    description: The staging claim's size. Required with O(state=present).
    type: str
  storage_class:
    description: The staging claim's storage class; without it, the cluster's default class.
    type: str
  source:
    description:
      - "Where the ingest job takes the data from, C({s3: s3://bucket/prefix}) or C({url: https://...}). Without it
        no ingest job is made and the tenant fills the staging claim itself."
      - "With O(cache) and O(state=published), the S3 prefix the cache mounts (an C(s3) source is required)."
    type: dict
  ingest_image:
    description: The image the ingest job runs (with C(aws) for an S3 source, C(curl) for a URL). Required with
      O(source) and O(state=present).
    type: str
  cache:
    description:
      - "Cache the published version in the IDC with Fluid's Alluxio runtime. Only with O(state=published) (and
        ignored with O(state=absent), which removes any cache). Without it a run leaves an existing cache as it is."
    type: dict
    suboptions:
      replicas:
        description: The cache workers (Alluxio workers).
        type: int
        default: 1
      medium:
        description: The tiered store's one level, memory (C(MEM)) or a node-local disk (C(SSD), C(HDD)).
        type: str
        choices: [MEM, SSD, HDD]
        default: MEM
      path:
        description: Where each worker keeps the cache on its node; C(/dev/shm) for C(MEM), required for C(SSD) and
          C(HDD).
        type: str
      quota:
        description: How much each worker caches at most.
        type: str
        default: 2Gi
  force:
    description: Remove a version that unfinished pods mount (they keep running on what they mounted).
    type: bool
    default: false
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
attributes:
  diff_mode:
    support: none
    details: RV(writes) names every object the run creates, keeps, applies again (C(updated), the cache's objects) or
      removes, in order; there is no field-level diff.
seealso:
  - module: gpucloud.platform.tenant_object_store
  - module: gpucloud.platform.vcjob
"""

EXAMPLES = r"""
- name: Stage imagenet v1 from the tenant's datasets bucket
  gpucloud.platform.dataset:
    tenant: alpha
    name: imagenet
    version: v1
    size: 200Gi
    source: {s3: "s3://tenant-alpha-datasets/imagenet/"}
    ingest_image: registry.example.com/tools/aws-cli:2

- name: Publish it read-only
  gpucloud.platform.dataset:
    tenant: alpha
    name: imagenet
    version: v1
    state: published

- name: Publish it with a cache of two workers on each node's NVMe disk
  gpucloud.platform.dataset:
    tenant: alpha
    name: imagenet
    version: v1
    state: published
    source: {s3: "s3://tenant-alpha-datasets/imagenet/"}
    cache:
      replicas: 2
      medium: SSD
      path: /mnt/nvme0/dataset-cache
      quota: 500Gi
"""

RETURN = r"""
phase:
  description: Where the version is after the run, C(staging), C(published) or C(absent).
  returned: always
  type: str
claim:
  description: The claim that holds the version now (the staging claim, or the published one).
  returned: unless O(state=absent)
  type: str
  sample: dataset-imagenet-v1
ingest:
  description: The ingest job's phase, when there is one.
  returned: always
  type: str
cache:
  description: The name of the Fluid Dataset and AlluxioRuntime that cache the version, with O(cache).
  returned: always
  type: str
  sample: cache-imagenet-v1
writes:
  description: What was written (in check mode, would be), in order.
  returned: always
  type: list
  elements: str
summary:
  description: What the run did, in lines a person reads.
  returned: always
  type: list
  elements: str
changed:
  description: Whether anything was written (in check mode, would be).
  returned: always
  type: bool
requests:
  description: How many API requests the run made.
  returned: always
  type: int
done:
  description: The writes made before a failed one (running again finishes the change).
  returned: on a failure part-way
  type: list
  elements: str
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.cache import (
    CACHE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.service import (
    DATASET_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.summary import (
    dataset_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = {
    "tenant": {"type": "str", "required": True},
    "name": {"type": "str", "required": True},
    "version": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "published", "absent"], "default": "present"},
    "size": {"type": "str"},
    "storage_class": {"type": "str"},
    "source": {"type": "dict"},
    "ingest_image": {"type": "str"},
    "force": {"type": "bool", "default": False},
    "cache": {"type": "dict", "options": CACHE_OPTIONS},
}


def main() -> None:
    run_flow(OPTIONS, DATASET_FLOW, summary=dataset_summary)


if __name__ == "__main__":
    main()
