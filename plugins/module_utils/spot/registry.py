# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``spot``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import (
    apportion,
    candidates,
    capacity_plan,
    holdings,
    lending,
    market,
    offer,
    reclaim,
    victims,
)

RULES: tuple[RuleRef, ...] = (
    RuleRef("known-tenant", market.unknown_tenant_errors),
    RuleRef("paying-claim", offer.paying_claims),
    RuleRef("paying-use", offer.paying_use),
    RuleRef("queue-holdings", holdings.queue_holdings),
    RuleRef("reclaim-input", reclaim.reclaim_input_errors),
    RuleRef("reclaim-need", victims.reclaim_need),
    RuleRef("spot-apportionment", apportion.apportion_spot),
    RuleRef("spot-candidate", candidates.candidates_from_vcjobs),
    RuleRef("spot-candidate-pod", candidates.candidates_from_pods),
    RuleRef("spot-capability-floor", capacity_plan.spot_capability_floor),
    RuleRef("spot-demand", lending.spot_demand),
    RuleRef("spot-history-of-tenant", market.tenant_history),
    RuleRef("spot-lending", lending.lend_spot),
    RuleRef("spot-lending-resources", lending.apportion_by_demand),
    RuleRef("spot-market-input", market.market_input_errors),
    RuleRef("spot-offer", offer.spot_offer),
    RuleRef("spot-pool-not-empty", capacity_plan.empty_pool_errors),
    RuleRef("spot-price-step", market.next_price_above),
    RuleRef("spot-reclaim-count", reclaim.raised_count),
    RuleRef("spot-reclaim-rank", market.reclaim_ranks),
    RuleRef("spot-safe-bid", market.safe_bid),
    RuleRef("spot-victim-order", victims.victim_order_key),
    RuleRef("spot-victim-stop", victims.choose_victims),
    RuleRef("timestamp", victims.parse_time),
    RuleRef("unsold-reclaim-need", victims.unsold_reclaim_need),
    RuleRef("unused-for-spot", offer.unused_for_spot),
    RuleRef("unused-reclaim-need", victims.unused_reclaim_need),
)
