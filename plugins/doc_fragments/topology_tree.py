# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a module computes the topology tree from node labels or from switches in
inventory (its option ``source`` picks which), whose argument spec is
``TREE_OPTIONS`` in module_utils/topology/discovery.py."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  tier_labels:
    description:
      - With O(source=labels), the node label keys that name a node's switch at each tier, lowest tier first
        (tier 1 is the switch the node hangs off). Any number of tiers.
    type: list
    elements: str
    default: [topology.volcano.sh/tor, topology.volcano.sh/spine]
  name_template:
    description:
      - With O(source=labels), how a label value becomes a HyperNode name. Must contain C({value}); may contain C({tier}).
    type: str
    default: "{value}"
  switches:
    description:
      - With O(source=inventory), the switches. Each has C(name), C(tier) (1 or more), optionally C(tier_name),
        and either C(nodes) (node names), C(node_pattern) (a regular expression, leaf only),
        C(node_labels) (a label map, leaf only), or C(switches) (names of member switches).
    type: list
    elements: dict
  node_selector:
    description:
      - A label selector limiting the Nodes the run considers (for example only GPU nodes).
      - Checked before the module connects (C(key), C(!key), C(key=value), C(key!=value), C(key in (a,b)),
        C(key notin (a,b)), with label keys and label values); a bad one is refused naming O(node_selector).
    type: str
"""
