# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The object store's pure core: buckets and identities, the connection, the tenant's
credentials, and the plan of ``tenant_object_store`` (its refusals before any write)."""

from __future__ import annotations

import base64
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import TENANT_NAME_MAX
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore import (
    buckets,
    connection,
    credentials,
    plan,
    summary,
)

S3_BUCKET = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
STORE = connection.StoreConnection(
    endpoint="http://127.0.0.1:7070",
    admin_endpoint="http://127.0.0.1:7071",
    access_key="root",
    secret_key="rootsecret",
)
tenant_names = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,41}[a-z0-9])?", fullmatch=True)


def b64(data: dict[str, str]) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}


@given(tenant_names)
def test_every_tenant_name_gives_valid_s3_bucket_names(tenant):
    names = buckets.bucket_names(tenant)
    assert set(names) == set(buckets.PURPOSES)
    for name in names.values():
        assert S3_BUCKET.match(name) and "--" not in name[: len("tenant-")], name
        assert len(name) <= 63
    assert len(tenant) <= TENANT_NAME_MAX


def test_the_identity_is_the_namespace_name_and_the_purposes_are_checked():
    assert buckets.identity_of("alpha") == "tenant-alpha"
    assert buckets.purpose_errors(["models", "checkpoints"]) == []
    assert "is not a bucket purpose" in str(buckets.purpose_errors(["weights"])[0])
    assert "names a purpose twice" in str(buckets.purpose_errors(["models", "models"])[0])
    assert "must be a list" in str(buckets.purpose_errors("models")[0])


def test_a_bucket_of_another_owner_is_foreign_but_the_root_s_is_not():
    owners = {
        "tenant-a-datasets": "tenant-a",
        "tenant-a-models": "root",
        "tenant-a-checkpoints": "mallory",
    }
    assert buckets.foreign_buckets(list(owners), owners, "tenant-a", "root") == {
        "tenant-a-checkpoints": "mallory"
    }


def test_the_connection_names_each_missing_or_malformed_key():
    store, errors = connection.connection_from(None)
    assert store is None and "run the object_store role" in str(errors[0])
    store, errors = connection.connection_from({"data": b64({"endpoint": "s3.example.com"})})
    said = [str(e) for e in errors]
    assert store is None
    assert any("admin_endpoint: is missing" in e for e in said)
    assert any("endpoint: 's3.example.com' must be an http(s) URL" in e for e in said)
    data = {
        "endpoint": "https://s3.example.com/",
        "admin_endpoint": "https://s3.example.com:7071",
        "access_key": "root",
        "secret_key": "x",
        "verify_tls": "false",
    }
    store, errors = connection.connection_from({"data": b64(data)})
    assert errors == [] and store is not None
    assert store.endpoint == "https://s3.example.com" and store.host == "s3.example.com"
    assert store.uses_https and not store.verify_tls and store.region == "us-east-1"


def test_the_key_comes_from_the_store_then_the_secret_then_anew():
    held = {"data": b64({"AWS_ACCESS_KEY_ID": "tenant-a", "AWS_SECRET_ACCESS_KEY": "kept"})}
    assert credentials.key_source("stored", held, "tenant-a", "fresh") == ("stored", "store")
    assert credentials.key_source(None, held, "tenant-a", "fresh") == ("kept", "secret")
    # a Secret of another identity (edited by hand) is not the tenant's key
    assert credentials.key_source(None, held, "tenant-b", "fresh") == ("fresh", "new")
    assert credentials.key_source(None, None, "tenant-a", "fresh") == ("fresh", "new")


def test_the_secret_carries_the_keys_endpoint_buckets_and_kserves_annotations():
    secret = credentials.credentials_secret(
        "a", "tenant-a", "k", STORE, buckets.bucket_names("a", ("models",))
    )
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {
        "AWS_ACCESS_KEY_ID": "tenant-a",
        "AWS_SECRET_ACCESS_KEY": "k",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:7070",
        "AWS_DEFAULT_REGION": "us-east-1",
        "BUCKET_MODELS": "tenant-a-models",
    }
    notes = secret["metadata"]["annotations"]
    assert notes["serving.kserve.io/s3-endpoint"] == "127.0.0.1:7070"
    assert notes["serving.kserve.io/s3-usehttps"] == "0"
    account = credentials.store_account("a")
    assert account["secrets"] == [{"name": "platform-object-store"}]
    assert account["automountServiceAccountToken"] is False


def test_what_someone_else_added_to_the_secret_changes_nothing():
    want = credentials.credentials_secret("a", "tenant-a", "k", STORE, {})
    have = {
        **want,
        "metadata": {**want["metadata"], "labels": {**want["metadata"]["labels"], "x": "y"}},
        "data": {**want["data"], "MINE": "eA=="},
    }
    assert not credentials.differs(want, have)
    assert credentials.differs(
        want, {**have, "data": {**have["data"], "AWS_SECRET_ACCESS_KEY": "eA=="}}
    )
    assert credentials.differs(want, None)


def facts(**extra) -> plan.StoreFacts:
    base = {
        "connection": STORE,
        "namespace": {"metadata": {"name": "tenant-a"}},
        "fresh_key": "fresh",
    }
    base.update(extra)
    return plan.StoreFacts(**base)


def test_a_first_run_makes_the_account_buckets_owners_secret_and_account():
    request = plan.parse_store({"tenant": "a"})
    planned = plan.plan_store(request, facts())
    assert planned.writes == [
        "account tenant-a",
        "bucket tenant-a-datasets",
        "bucket tenant-a-checkpoints",
        "bucket tenant-a-models",
        "owner of tenant-a-datasets",
        "owner of tenant-a-checkpoints",
        "owner of tenant-a-models",
        "Secret/platform-object-store",
        "ServiceAccount/platform-object-store",
    ]
    assert planned.key == "fresh" and planned.key_source == "new"
    report = plan.report_store(request, planned)
    assert report["new_key"] and report["changed"]
    assert "fresh" not in str(report)  # the key is never in the result


def test_a_second_run_writes_nothing():
    request = plan.parse_store({"tenant": "a"})
    first = plan.plan_store(request, facts())
    owners = {b: "tenant-a" for b in request.buckets.values()}
    secret, account = first.manifests
    again = plan.plan_store(
        request,
        facts(store_key="fresh", owners=owners, secret=secret, account=account, fresh_key="other"),
    )
    assert again.writes == [] and again.key == "fresh" and again.key_source == "store"
    lines = summary.store_summary({"tenant": "a"}, plan.report_store(request, again), False)
    assert lines[-1] == "nothing to change"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"connection": None, "connection_errors": ()},
            "the platform's object store is not configured",
        ),
        ({"namespace": None}, "'a' has no namespace tenant-a; make the tenant first"),
        (
            {"owners": {"tenant-a-models": "tenant-b"}},
            "bucket tenant-a-models exists and belongs to 'tenant-b'",
        ),
    ],
)
def test_refusals_come_before_any_write(extra, message):
    with pytest.raises(PlatformValidationError, match=re.escape(message)):
        plan.plan_store(plan.parse_store({"tenant": "a"}), facts(**extra))


def test_absent_removes_the_access_and_keeps_the_buckets():
    request = plan.parse_store({"tenant": "a", "state": "absent"})
    planned = plan.plan_store(
        request,
        facts(store_key="k", secret={"metadata": {}}, account={"metadata": {}}, namespace=None),
    )
    assert planned.writes == [
        "account tenant-a removed",
        "ServiceAccount/platform-object-store removed",
        "Secret/platform-object-store removed",
    ]
    report = plan.report_store(request, planned)
    lines = summary.store_summary({"tenant": "a", "state": "absent"}, report, True)
    assert "would be removed; its buckets and their objects are kept" in lines[0]
    assert lines[1].startswith("would write 3")


def test_options_are_checked_before_anything_is_read():
    with pytest.raises(PlatformValidationError) as caught:
        plan.parse_store({"tenant": "Bad_Name", "buckets": ["weights"]})
    text = str(caught.value)
    assert "tenant:" in text and "buckets[0]: 'weights' is not a bucket purpose" in text
