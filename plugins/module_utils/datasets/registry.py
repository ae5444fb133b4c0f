# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``datasets``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import cache, objects, plan

RULES: tuple[RuleRef, ...] = (
    RuleRef("dataset-cache-mount", cache.cache_dataset),
    RuleRef("dataset-cache-source", cache.cache_errors),
    RuleRef("dataset-cache-tier", cache.cache_runtime),
    RuleRef("dataset-in-use", plan.mounting_pods),
    RuleRef("dataset-ingest", objects.ingest_job),
    RuleRef("dataset-names", objects.staging_claim),
    RuleRef("dataset-published-readonly", objects.published_volume),
)
