#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tenant_catalog
short_description: Converge every tenant of the GPU cloud to one catalog in one run, render it for GitOps, or read it back
version_added: 0.2.0
description:
  - With O(state=present), takes the whole list of tenants (O(tenants) or the file O(src)) and makes the cluster hold
    exactly what each one is entitled to - the same namespace, RBAC, network policy, queue list and Volcano queues
    as M(gpucloud.platform.tenant) makes for one tenant, with the same rules and the same refusals.
  - Reads the fleet with one list call per kind (Namespaces, Roles, RoleBindings, NetworkPolicies, ConfigMaps,
    ClusterRoles and ClusterRoleBindings selected by C(platform.io/tenant); every Queue, PodGroup and Node; the
    ServiceCIDRs) and one GET of the parent-queues list, whatever the number of tenants; then writes only what
    differs, O(workers) tenants at a time, each tenant's writes in order.
  - A 429 answer of API priority and fairness is waited out for its C(Retry-After) and the request sent again.
  - The catalog is checked as a whole before the first request - every entry's fields, duplicate names (rule
    catalog-unique-names), two tenants deriving the same queue (rule catalog-queue-names-unique) - and, before the
    first write, against the cluster - every purchase together must fit in the pool (rule catalog-oversell-guard),
    and no queue may belong to a tenant outside the catalog (rule catalog-queue-name-owned).
  - A tenant the cluster's state refuses (a capability below what a queue has allocated, a busy team removed, an
    egress into the cluster) fails the run before any write with O(on_refusal=fail), naming every refused tenant;
    with O(on_refusal=skip) the other tenants are written and the refused ones reported with their reasons.
  - Tenants the platform manages but the catalog no longer names are removed only with O(prune=true), and while
    they have active Volcano Jobs or pods only with O(force=true) too. In check mode they are listed.
  - Reports a per-tenant table (RV(summary)) - created, changed, unchanged, refused or pruned - and, with
    O(progress_file), appends a progress line to that file every two seconds while it writes.
  - With O(state=rendered), returns the manifests without a cluster (no kubeconfig, no request), stable and sorted,
    for a GitOps repository.
  - With O(state=gathered), makes the reads of a run and returns them in RV(gathered), and reads the live tenants
    back into catalog entries (RV(tenants)); applying them with O(state=present) to the same cluster writes nothing.
    Nothing is written.
  - With O(state=parsed), plans the catalog against O(facts) (what O(state=gathered) returned) without connecting,
    and returns what a check-mode run on that cluster returns, with C(changed=false) - every refusal included. The
    sale's spot reclaim reads the spot jobs under its Lease when a run applies, so a plan whose sale reclaims says
    the sale but no victims (RV(reclaim) is empty).
  - "A run that sells GPUs sells like a purchase (C(tenant_create.yml)), once for the whole run (rule catalog-sale):
    what the catalog sells after the run less what is sold before is the demand of one spot reclaim made before the
    first write, counted from the GPUs nobody has bought (rule unsold-reclaim-need; the same code, Lease, Events and
    history as M(gpucloud.platform.spot_reclaim)); after the last write every spot queue's capability is recomputed
    once (as M(gpucloud.platform.spot_capacity)), so spot holds at most the unsold GPUs. A run that changes no
    subscription or pay-as-you-go grant does neither."
  - In check mode nothing is written; objects the API server can judge alone are sent as a server-side dry run. The
    reclaim only reports its victims, and RV(spot) says what the spot capacity would come to.
options:
  state:
    description:
      - V(present) converges the cluster to the catalog, V(rendered) returns its manifests without a cluster.
      - V(gathered) makes the reads of a run and returns them in RV(gathered), with the live tenants in catalog form
        (RV(tenants)); nothing is written. With O(prune=true) it needs the catalog too, and also reads what runs in
        and is held by each tenant the catalog would prune.
      - V(parsed) plans from O(facts) without connecting, and returns what a check-mode run returns, with
        C(changed=false).
    type: str
    choices: [present, rendered, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the cluster to plan against, as RV(gathered) holds it (C(objects), C(queues),
        C(podgroups), C(nodes), C(service_cidrs), C(parent_list), C(running)).
      - A plan with O(prune=true) needs facts gathered with the same catalog and O(prune=true).
    type: dict
  tenants:
    description:
      - The catalog, one entry per tenant. An entry takes the per-tenant options of M(gpucloud.platform.tenant) -
        C(name), C(subscription), C(subscription_guarantee), C(payg), C(teams), C(subjects), C(egress_cidrs),
        C(egress_to_nodes), C(egress_to_metadata) and C(allow_critical) - with the same meaning and defaults;
        any other key is refused, naming C(tenants[<i>].<key>).
      - Required with O(state=present), O(state=rendered) and O(state=parsed) unless O(src) is given, and with
        O(state=gathered) and O(prune=true).
    type: list
    elements: dict
  src:
    description:
      - A YAML file on the managed host holding the catalog - a list of entries as in O(tenants), or a mapping with
        the key C(tenants).
      - "A relative path is taken from the module's working directory (rule catalog-path): with a local connection
        Ansible runs a module in the playbook's directory, so C(playbooks/tenant_catalog.yml) makes its
        C(tenant_catalog_file) absolute first, from the directory it was started in (the project checkout in AWX)."
      - A file that cannot be read is refused naming its absolute path.
    type: path
  defaults:
    description:
      - Values every entry takes unless it says otherwise (for example C(egress_cidrs) or C(subjects)); C(name) is
        not allowed here.
    type: dict
    default: {}
  pod_cidr:
    description:
      - The cluster's pod network, cut out of every tenant's egress. Unless given, read from the Nodes.
      - Required with O(state=rendered), which reads nothing.
    type: str
  service_cidr:
    description:
      - The cluster's service network, cut out of every tenant's egress. Unless given, read from the ServiceCIDRs.
      - Required with O(state=rendered).
    type: str
  node_selector:
    description:
      - Node labels a node must carry to count in the pool the oversell guard checks against, as in
        M(gpucloud.platform.tenant).
    type: dict
    default: {}
    aliases: [pool_node_selector]
  spot_offer:
    description:
      - What spot may hold when a purchase recomputes the spot capabilities, as
        O(gpucloud.platform.spot_capacity#module:offer) does (the site's C(spot_offer)).
      - V(unsold) is every GPU nobody bought; V(unused) every GPU no paying queue holds or waits for.
    type: str
    choices: [unsold, unused]
    default: unsold
    version_added: 0.2.0
  spot_apportion:
    description:
      - How the offer is shared among the tenants when a purchase recomputes the spot capabilities, as
        O(gpucloud.platform.spot_capacity#module:apportion) does (the site's C(spot_apportion)).
      - V(share) is each tenant's subscription share; V(demand) lends what shares leave unused to waiting spot gangs
        larger than their tenant's share.
    type: str
    choices: [share, demand]
    default: share
    version_added: 0.2.0
  oversell_check:
    description:
      - Refuse a catalog whose subscriptions and pay-as-you-go grants together grow beyond the pool (rule
        catalog-oversell-guard). A catalog that sells no more than the cluster already does is never refused.
      - The same for storage, per class (rule catalog-storage-oversell) - the tenants' C(bounds.storage_classes)
        together against each class's capacity as the storage role records it (ConfigMap
        C(platform-storage-capacity) in C(platform-system), one GET); a class with no capacity recorded is not
        judged.
    type: bool
    default: true
  prune:
    description:
      - Remove the tenants the platform manages that the catalog does not name, as
        M(gpucloud.platform.tenant) with O(gpucloud.platform.tenant#module:state=absent) does.
      - With O(state=parsed), plans the prune; with O(state=gathered), reads what the plan needs for it.
      - A tenant with active Volcano Jobs or pods is refused unless O(force=true).
      - "A catalog that names no tenant never prunes (rule catalog-prune-empty): a catalog file that is empty, or a
        misspelt variable that left the catalog empty, would otherwise delete every tenant. The run is refused before
        anything is read, whatever O(on_refusal) says."
      - A tenant that holds PersistentVolumeClaims or Secrets of its own is refused unless O(prune_confirm) names it
        (rule catalog-prune-data).
    type: bool
    default: false
  max_prune:
    description:
      - The most tenants one run may prune (rule catalog-prune-max). A run that would prune more is refused before
        any write, naming them, whatever O(on_refusal) says; raise it when the catalog is right.
    type: int
    default: 5
  prune_confirm:
    description:
      - The tenants to prune although they hold PersistentVolumeClaims or Secrets, by name, for this run only. Their
        data goes with their namespace.
    type: list
    elements: str
    default: []
  force:
    description:
      - Accept a capability below what a queue has allocated, remove team queues that run jobs, and prune tenants
        whose jobs still run.
    type: bool
    default: false
  on_refusal:
    description:
      - V(fail) writes nothing when any tenant is refused; V(skip) writes the others and reports the refused ones.
    type: str
    choices: [fail, skip]
    default: fail
  workers:
    description:
      - How many tenants are written at the same time (1 to 64). Each tenant's own writes stay in order.
    type: int
    default: 8
  reclaim:
    description:
      - When the run sells more GPUs than stay unsold beside what spot jobs hold, reclaim spot jobs first, cheapest
        first. When false such a run is refused before any write, with the numbers (rule catalog-sale-reclaim).
      - A reclaim that spot jobs cannot meet, or whose Lease another run holds, is refused before any write either way.
    type: bool
    default: true
  demand_reason:
    description:
      - What the sale is for, written into the reclaim Events and history. Defaults to the GPUs sold and the tenants
        that buy them.
    type: str
  progress_file:
    description:
      - A file on the managed host the run appends progress lines to while it writes (C(tail -f) it).
      - Written in check mode too, the one thing check mode writes - a dry run over a large catalog takes as long as
        its server-side dry runs, and the lines count them.
    type: path
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.reclaim
notes:
  - The API requests do not grow with the catalog's reads - about twelve list calls - but its writes do, one per
    object that differs. An unchanged run makes only the reads.
  - The rendered Queues carry the capacity the first run writes; the pay-as-you-go and spot capabilities are then
    the platform's reconciles' to change, so a GitOps tool should ignore differences in their C(spec.capability).
seealso:
  - module: gpucloud.platform.tenant
  - module: gpucloud.platform.tenant_info
"""

EXAMPLES = r"""
- name: Every tenant as the inventory declares it
  gpucloud.platform.tenant_catalog:
    tenants: "{{ platform_tenants }}"
    progress_file: /tmp/tenant-catalog.progress

- name: The catalog kept in Git, removing tenants taken out of it (never one with running work)
  gpucloud.platform.tenant_catalog:
    src: /srv/platform/tenants.yml
    prune: true

- name: Retire two tenants on purpose, one of them with its data claims
  gpucloud.platform.tenant_catalog:
    src: /srv/platform/tenants.yml
    prune: true
    max_prune: 2
    prune_confirm: [old-lab]

- name: What the catalog would change, without writing
  gpucloud.platform.tenant_catalog:
    tenants: "{{ platform_tenants }}"
    prune: true
  check_mode: true
  diff: true

- name: Manifests for a GitOps repository (no cluster needed)
  gpucloud.platform.tenant_catalog:
    state: rendered
    tenants: "{{ platform_tenants }}"
    pod_cidr: 10.244.0.0/16
    service_cidr: 10.96.0.0/12
  register: rendered

- name: Put an existing cluster under a catalog
  gpucloud.platform.tenant_catalog:
    state: gathered
  register: gathered

- name: Review offline what the catalog would change on the cluster gathered above
  gpucloud.platform.tenant_catalog:
    state: parsed
    tenants: "{{ platform_tenants }}"
    facts: "{{ gathered.gathered }}"
  register: plan
"""

RETURN = r"""
changed:
  description: Whether an object was (in check mode, would be) written or deleted.
  returned: always
  type: bool
summary:
  description:
    - One row per catalog tenant and per tenant to prune - C(name), C(status) (V(created), V(changed),
      V(unchanged), V(refused), V(pruned), or V(failed) when its writes failed), C(objects) (how many it changed),
      and C(errors) for a refused tenant, C(running) for one to prune, C(error) for a failed one.
    - With O(state=gathered), one line saying what was read; empty with O(state=rendered).
  returned: always
  type: list
  elements: dict
  sample: [{name: alpha, status: created, objects: 10}, {name: beta, status: unchanged, objects: 0}]
counts:
  description: How many tenants ended in each status.
  returned: with O(state=present) or O(state=parsed)
  type: dict
  sample: {created: 998, changed: 1, unchanged: 0, refused: 1, pruned: 0}
objects:
  description: The objects written or deleted (in check mode, that would be), tenant by tenant.
  returned: with O(state=present) or O(state=parsed)
  type: list
  elements: dict
  sample: [{kind: Queue, name: tenant-alpha-subscription, action: create}]
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is C(Kind/namespace/name); each holds the before
      and after of each changed object, only the fields the module owns. Ansible shows each under its own header (rule
      diff-per-object).
    - Each spot job the sale's reclaim deletes (in check mode, would delete) under C(spot reclaim <namespace>/<name>),
      and each spot queue's reclaim count, as M(gpucloud.platform.spot_reclaim) shows them. The spot queues the
      recompute changes are in C(updated) of RV(spot).
  returned: when diff mode is on
  type: list
  elements: dict
manifests:
  description:
    - Every object of the catalog, sorted - cluster-scoped before namespaced, in the order the platform writes kinds
      (Namespace, ClusterRole, ClusterRoleBinding, Role, RoleBinding, NetworkPolicy, ConfigMap, Queue with parents
      first), then by namespace and name. The same catalog renders the same list.
  returned: with O(state=rendered)
  type: list
  elements: dict
by_tenant:
  description:
    - RV(manifests) per tenant name, each list in the same order; the shared parent-queues list under the empty
      name. One file each in a GitOps repository (C(playbooks/tenant_catalog.yml) writes them).
  returned: with O(state=rendered)
  type: dict
tenants:
  description:
    - With O(state=gathered), the live tenants as catalog entries, sorted by name.
    - With O(state=rendered), the names of the tenants rendered.
  returned: with O(state=gathered) or O(state=rendered)
  type: list
  elements: raw
done:
  description:
    - When the run fails part-way, the writes it had made; running again finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
sale:
  description:
    - What the run sells, in GPUs (rule catalog-sale) - C(pool), C(sold_before), C(sold_after), C(added) (the demand
      of the spot reclaim), C(unsold_after), C(growing) (the tenants buying more), C(reclaims), C(recomputes) - and
      C(summary), one line saying what was sold, what was reclaimed and the spot capacity after.
  returned: with O(state=present) or O(state=parsed)
  type: dict
  sample:
    pool: 64
    sold_before: 24
    sold_after: 48
    added: 24
    unsold_after: 16
    growing: [gamma (+24)]
    reclaims: true
    recomputes: true
    summary: "24 -> 48 of 64 GPUs sold (+24); reclaimed 24 spot GPUs (tenant-alpha/spot-a); spot capacity after: 16
      GPUs over 3 spot queues (3 changed)"
reclaim:
  description:
    - The sale's spot reclaim as M(gpucloud.platform.spot_reclaim) reports it (C(time), C(reason), C(demand),
      C(pool), C(allocated), C(free), C(shortfall), C(freed), C(victims)); empty when the run sells nothing more. In
      check mode the victims it would take.
  returned: with O(state=present) or O(state=parsed)
  type: dict
spot:
  description:
    - The spot capacity after the run - C(gpus), what every spot queue's capability adds up to (the idle pool), and
      C(updated), the spot queues whose capability changed. C(recomputed) is false in check mode and when no purchase
      changed; C(gpus) is then the unsold GPUs the recompute would share out.
  returned: with O(state=present) or O(state=parsed)
  type: dict
  sample: {recomputed: true, gpus: 16, spot_queues: 3, updated: [tenant-alpha-spot, tenant-beta-spot]}
gathered:
  description:
    - The reads of a run, as read - C(objects) (each tenant kind's list, selected by C(platform.io/tenant), in the
      order read), C(queues), C(podgroups), C(nodes), C(service_cidrs), C(parent_list) and C(running) (for a prune,
      each tenant to prune's active Volcano Jobs and pods and the claims and Secrets it holds). Give it to
      O(facts) with O(state=parsed).
  returned: with O(state=gathered)
  type: dict
state:
  description: V(rendered) or V(parsed) when the answer is a plan made without connecting; nothing was written.
  returned: with O(state=rendered) or O(state=parsed)
  type: str
requests:
  description: How many API requests the run made (0 with O(state=rendered) and O(state=parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.flow import CATALOG_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.inputs import STATES
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import RECLAIM_OPTIONS

OPTIONS = {
    "state": {"type": "str", "choices": list(STATES), "default": "present"},
    "facts": {"type": "dict"},
    "tenants": {"type": "list", "elements": "dict"},
    "src": {"type": "path"},
    "defaults": {"type": "dict", "default": {}},
    "pod_cidr": {"type": "str"},
    "service_cidr": {"type": "str"},
    "node_selector": {"type": "dict", "default": {}, "aliases": ["pool_node_selector"]},
    "spot_offer": {"type": "str", "choices": ["unsold", "unused"], "default": "unsold"},
    "spot_apportion": {"type": "str", "choices": ["share", "demand"], "default": "share"},
    "oversell_check": {"type": "bool", "default": True},
    "prune": {"type": "bool", "default": False},
    "max_prune": {"type": "int", "default": 5},
    "prune_confirm": {"type": "list", "elements": "str", "default": []},
    "force": {"type": "bool", "default": False},
    "on_refusal": {"type": "str", "choices": ["fail", "skip"], "default": "fail"},
    "workers": {"type": "int", "default": 8},
    "progress_file": {"type": "path"},
    "reclaim": {"type": "bool", "default": True},
    "demand_reason": {"type": "str"},
    **{k: v for k, v in RECLAIM_OPTIONS.items() if k != "node_selector"},
}


def rendered(params: dict) -> dict | None:
    """The answer of ``state: rendered`` (and ``parsed``) without connecting; None for a
    run that connects."""
    return CATALOG_FLOW.offline(params)


def rows(params: dict, result: dict, check_mode: bool) -> list:
    """The run's per-tenant table (RV(summary)), kept as the result's ``summary``."""
    return list(result.get("summary") or [])


def main() -> None:
    # Every input is checked before the module connects.
    run_flow(OPTIONS, CATALOG_FLOW, summary=rows, diff_by_object=True)


if __name__ == "__main__":
    main()
