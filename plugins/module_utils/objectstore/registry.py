# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``objectstore``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import buckets, connection, credentials, retention, retention_plan

RULES: tuple[RuleRef, ...] = (
    RuleRef("bucket-of-its-tenant", buckets.foreign_buckets),
    RuleRef("checkpoint-buckets", retention_plan.checkpoint_buckets),
    RuleRef("checkpoint-of-object", retention.checkpoint_of),
    RuleRef("checkpoint-retention", retention.expired),
    RuleRef("store-connection", connection.connection_from),
    RuleRef("store-credentials", credentials.credentials_secret),
    RuleRef("store-key-source", credentials.key_source),
    RuleRef("tenant-buckets", buckets.bucket_names),
    RuleRef("tenant-store-identity", buckets.identity_of),
)
