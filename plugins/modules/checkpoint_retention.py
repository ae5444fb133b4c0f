#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: checkpoint_retention
short_description: Keep the newest checkpoints of each job in the tenants' checkpoint buckets, delete the rest
version_added: 0.1.0
description:
  - "A training job writes its checkpoints to its tenant's checkpoint bucket as C(<job>/<checkpoint>): one object
    (C(<job>/step-500.pt)) or everything under one prefix (C(<job>/step-500/...)) is one checkpoint (rule
    checkpoint-of-object; docs/object-store.md)."
  - "Per job, the newest O(keep) checkpoints stay (newest by their newest object) and every object of the others is
    deleted (rule checkpoint-retention). A job with O(keep) or fewer loses nothing."
  - "Which buckets it sweeps comes from the store (rule checkpoint-buckets): every C(tenant-<tenant>-checkpoints) that
    the tenant's own account owns (gpucloud.platform.tenant_object_store makes them), or only O(tenant)'s."
  - "The store comes from the platform's connection Secret (the C(object_store) role's)."
  - "In check mode nothing is deleted; the result says what would be."
options:
  tenant:
    description: Only this tenant's checkpoint bucket; without it, every tenant's.
    type: str
  keep:
    description: How many of each job's newest checkpoints stay (at least 1).
    type: int
    default: 2
  job:
    description: Only this job's checkpoints (the first part of their keys).
    type: str
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
attributes:
  diff_mode:
    support: none
    details: The result lists each bucket's deleted checkpoints; there is no object to diff.
seealso:
  - module: gpucloud.platform.tenant_object_store
"""

EXAMPLES = r"""
- name: Every tenant keeps the newest 2 checkpoints of each job
  gpucloud.platform.checkpoint_retention:

- name: Tenant alpha's job llama-ft keeps its newest 3
  gpucloud.platform.checkpoint_retention:
    tenant: alpha
    job: llama-ft
    keep: 3
"""

RETURN = r"""
keep:
  description: How many checkpoints of each job stay.
  returned: always
  type: int
buckets:
  description: Per bucket swept, its tenant, how many checkpoints it had and kept, and those deleted (in check mode,
    that would be), as C(<job>/<checkpoint>), with the objects and bytes they held.
  returned: always
  type: list
  elements: dict
  sample:
    - {bucket: tenant-alpha-checkpoints, tenant: alpha, checkpoints: 5, kept: 2, deleted: [llama-ft/step-100.pt],
       objects_deleted: 1, bytes_freed: 1048576}
summary:
  description: What the run did, in lines a person reads.
  returned: always
  type: list
  elements: str
changed:
  description: Whether anything was deleted (in check mode, would be).
  returned: always
  type: bool
requests:
  description: How many requests the run made, to the API server and to the store.
  returned: always
  type: int
done:
  description: The checkpoints deleted before a failed deletion.
  returned: on a failure part-way
  type: list
  elements: str
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.retention import (
    DEFAULT_KEEP,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.service import (
    RETENTION_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.summary import (
    retention_summary,
)

OPTIONS = {
    "tenant": {"type": "str"},
    "keep": {"type": "int", "default": DEFAULT_KEEP},
    "job": {"type": "str"},
}


def main() -> None:
    run_flow(OPTIONS, RETENTION_FLOW, summary=retention_summary)


if __name__ == "__main__":
    main()
