# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU pool a module counts: option ``node_selector``, whose argument spec is
``POOL_OPTIONS`` in module_utils/capacity/pool.py."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  node_selector:
    description:
      - Node labels (name to value) a node must carry to count in the pool, for example to leave out cloud-burst or
        maintenance nodes. Empty means every Ready, schedulable node.
    type: dict
    default: {}
"""
