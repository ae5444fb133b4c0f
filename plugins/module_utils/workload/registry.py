# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``workload``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import demand, fit, pool

RULES: tuple[RuleRef, ...] = (
    RuleRef("allocated", pool.allocated_from_pods),
    RuleRef("committed", pool.commitments_from_queues),
    RuleRef("gang-fits-nodes", fit.place_gang),
    RuleRef("idle-for-spot", pool.idle_for_spot),
    RuleRef("job-demand", demand.job_demand),
    RuleRef("node-selector", pool.selector_errors),
    RuleRef("pool", pool.pool_from_nodes),
)
