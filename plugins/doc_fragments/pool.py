# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU pool a module counts: option ``node_selector``, whose argument spec is
``POOL_OPTIONS`` in module_utils/workload/pool.py."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  node_selector:
    description:
      - Node labels (name to value) a node must carry to count in the pool, for example to leave out cloud-burst or
        maintenance nodes. Empty means every Ready, schedulable node.
      - Every key must be a Kubernetes label key (an optional DNS subdomain prefix and C(/), then a name of at most
        63 letters, digits, C(-), C(_) and C(.)) and every value a label value; anything else is refused before the
        first request, naming C(node_selector.<key>).
    type: dict
    default: {}
"""
