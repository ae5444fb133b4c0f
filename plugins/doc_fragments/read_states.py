# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options ``state`` and ``facts`` of a read-only module run through the module contract
(``module_utils/kube/flow``), whose argument spec is ``READ_STATE_OPTIONS`` there."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  state:
    description:
      - V(present) reads the cluster and reports.
      - V(gathered) reads the cluster and returns, in RV(gathered), the facts the report is made from, with only the
        fields it reads.
      - V(parsed) reports from O(facts) (what V(gathered) returned, from this or another cluster, or edited as a
        what-if) without connecting; the answer is the one a run on a cluster holding those facts gives.
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to report from, as RV(gathered) holds them.
    type: dict
"""
