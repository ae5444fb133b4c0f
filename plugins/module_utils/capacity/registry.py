# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``capacity``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import cloud, grace, oversell, payg, purchase, storage_oversell

RULES: tuple[RuleRef, ...] = (
    RuleRef("catalog-oversell-guard", oversell.catalog_oversell_errors),
    RuleRef("catalog-purchase", purchase.catalog_purchase),
    RuleRef("catalog-sale", purchase.catalog_sale),
    RuleRef("catalog-storage-oversell", storage_oversell.catalog_storage_oversell_errors),
    RuleRef("oversell-guard", oversell.oversell_errors),
    RuleRef("payg-burst-headroom", cloud.burst_headroom),
    RuleRef("payg-cloud-part", cloud.cloud_part_after),
    RuleRef("payg-grace", grace.hold_recent_grants),
    RuleRef("payg-grant-stamped", grace.grant_grows),
    RuleRef("payg-growth", payg.payg_growth_gpus),
    RuleRef("payg-idc-first", cloud.payg_split),
    RuleRef("payg-in-use", payg.payg_in_use),
    RuleRef("payg-input", payg.payg_input_errors),
    RuleRef("payg-oversell", payg.payg_oversell_errors),
    RuleRef("payg-resize", payg.payg_target),
    RuleRef("purchase-demand", purchase.purchase_demand),
    RuleRef("purchase-growth", purchase.purchase_growth),
    RuleRef("storage-class-oversell", storage_oversell.storage_oversell_errors),
)
