#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tenant_object_store
short_description: Give a tenant its buckets and its own credentials in the platform's object store
version_added: 0.1.0
description:
  - "A tenant gets one bucket per purpose, C(tenant-<tenant>-<purpose>) (datasets, checkpoints, models; rule
    tenant-buckets), owned by its own account in the store, C(tenant-<tenant>), of the store's least role: it can
    neither make buckets nor read another account's (rule tenant-store-identity). The store refuses every other
    tenant's credentials on them."
  - "The credentials land in the Secret C(platform-object-store) of the tenant's namespace (C(AWS_ACCESS_KEY_ID),
    C(AWS_SECRET_ACCESS_KEY), C(AWS_ENDPOINT_URL), C(AWS_DEFAULT_REGION), C(BUCKET_<PURPOSE>), and KServe's S3
    annotations) and the ServiceAccount of the same name lists it (rule store-credentials): an InferenceService with
    an C(s3://) model runs as it (gpucloud.platform.inference_service)."
  - "The store and the platform's keys come from the Secret C(platform-object-store) in C(platform-system), which
    the C(object_store) role writes (rule store-connection): no playbook passes them."
  - "The key is the store's when the tenant's account exists, else the one the tenant's Secret holds, else a new one
    (rule store-key-source): a second run writes nothing, and pods holding the Secret keep working."
  - "Refused before any write: no connection Secret, a tenant without its namespace, a bucket of that name owned by
    someone else (rule bucket-of-its-tenant: the platform never takes a bucket from its owner)."
  - "O(state=absent) removes the account, the Secret and the ServiceAccount; the buckets and their objects are kept."
  - "In check mode the store is not written (it has no dry run); the cluster's writes are the API server's dry runs."
options:
  tenant:
    description: The tenant.
    type: str
    required: true
  state:
    description: C(present) makes the buckets, the account and the credentials; C(absent) removes the account and the
      credentials and keeps the buckets.
    type: str
    choices: [present, absent]
    default: present
  buckets:
    description: The purposes to make buckets for.
    type: list
    elements: str
    choices: [datasets, checkpoints, models]
    default: [datasets, checkpoints, models]
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
attributes:
  check_mode:
    support: partial
    details: The object store has no dry run; in check mode it is read, not written. The cluster's writes are dry runs.
  diff_mode:
    support: partial
    details: The diff is the owners of the tenant's buckets before and after; the Secret's keys are never shown, and
      RV(writes) names every object written.
seealso:
  - module: gpucloud.platform.tenant
  - module: gpucloud.platform.inference_service
  - module: gpucloud.platform.checkpoint_retention
"""

EXAMPLES = r"""
- name: Tenant alpha gets its buckets and credentials
  gpucloud.platform.tenant_object_store:
    tenant: alpha

- name: Only a checkpoint bucket for tenant beta
  gpucloud.platform.tenant_object_store:
    tenant: beta
    buckets: [checkpoints]

- name: Tenant alpha's access to the store ends; its buckets stay
  gpucloud.platform.tenant_object_store:
    tenant: alpha
    state: absent
"""

RETURN = r"""
account:
  description: The tenant's account (access key id) in the store.
  returned: always
  type: str
  sample: tenant-alpha
buckets:
  description: Purpose -> bucket name.
  returned: always
  type: dict
  sample: {datasets: tenant-alpha-datasets, checkpoints: tenant-alpha-checkpoints, models: tenant-alpha-models}
secret:
  description: The Secret in the tenant's namespace that holds the credentials.
  returned: with O(state=present)
  type: str
  sample: platform-object-store
service_account:
  description: The ServiceAccount that lists that Secret.
  returned: with O(state=present)
  type: str
  sample: platform-object-store
new_key:
  description: Whether the run made the tenant a new key (no account and no Secret held one).
  returned: always
  type: bool
writes:
  description: What was written (in check mode, would be), in order.
  returned: always
  type: list
  elements: str
  sample: [account tenant-alpha, bucket tenant-alpha-datasets, owner of tenant-alpha-datasets,
    Secret/platform-object-store, ServiceAccount/platform-object-store]
diff:
  description: The owners of the tenant's buckets before and after (never a key).
  returned: in diff mode
  type: dict
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
  description: How many requests the run made, to the API server and to the store.
  returned: always
  type: int
done:
  description: The writes made before a failed one (every write is idempotent, so running again finishes the change).
  returned: on a failure part-way
  type: list
  elements: str
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.buckets import PURPOSES
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.service import (
    STORE_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.summary import (
    store_summary,
)

OPTIONS = {
    "tenant": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "buckets": {
        "type": "list",
        "elements": "str",
        "choices": list(PURPOSES),
        "default": list(PURPOSES),
    },
}


def main() -> None:
    run_flow(OPTIONS, STORE_FLOW, summary=store_summary)


if __name__ == "__main__":
    main()
