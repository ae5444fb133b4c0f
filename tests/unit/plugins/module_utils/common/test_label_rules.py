# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule label-key, rule label-value, rule label-selector and rule tenant-namespace."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    label_key_errors,
    label_map_errors,
    label_selector_errors,
    label_value_errors,
    namespace_name,
    tenant_namespace_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    label_selector,
    selector_errors,
)

ALNUM = string.ascii_letters + string.digits
# A label name or value as Kubernetes accepts it: alphanumeric ends, -_. inside.
names = st.one_of(
    st.text(ALNUM, min_size=1, max_size=1),
    st.builds(
        lambda a, mid, b: a + mid + b,
        st.text(ALNUM, min_size=1, max_size=1),
        st.text(ALNUM + "-_.", max_size=61),
        st.text(ALNUM, min_size=1, max_size=1),
    ),
)
dns_labels = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
prefixes = st.lists(dns_labels, min_size=1, max_size=4).map(".".join)
keys = st.one_of(names, st.builds(lambda p, n: f"{p}/{n}", prefixes, names))


@given(keys, st.one_of(st.just(""), names))
def test_valid_keys_and_values_pass(key, value):
    assert label_key_errors("k", key) == []
    assert label_value_errors("k", value) == []
    assert selector_errors({key: value}) == []
    assert label_selector_errors("s", label_selector({key: value})) == []


@given(names, st.text(",=!() ", min_size=1), names)
def test_a_value_with_selector_syntax_is_refused(head, junk, tail):
    errors = selector_errors({"platform.io/pool": head + junk + tail})
    assert [e.field for e in errors] == ["node_selector.platform.io/pool"]
    assert repr(head + junk + tail) in errors[0].message


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("", "is not a label key (a non-empty string)"),
        ("-pool", "its name '-pool' must be letters"),
        ("pool-", "its name 'pool-' must be letters"),
        ("Platform.io/pool", "its prefix 'Platform.io' is not a DNS-1123 subdomain"),
        ("/pool", "its prefix before '/' is empty"),
        ("platform.io/", "its name is empty"),
        ("a" * 64, "its name is 64 characters; at most 63"),
        ("a" * 254 + "/x", "its prefix is 254 characters; at most 253"),
        ("bad key", "its name 'bad key' must be letters"),
        ("a,b", "its name 'a,b' must be letters"),
        (3, "is not a label key"),
    ],
)
def test_bad_keys_name_the_field_and_the_key(key, words):
    (error,) = label_key_errors(f"node_selector.{key}", key)
    assert error.field == f"node_selector.{key}" and words in error.message
    assert repr(key) in error.message


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("main,x=y", "is not a label value"),
        ("-main", "is not a label value"),
        ("a" * 64, "is 64 characters; a label value has at most 63"),
        (3, "3 must be a string"),
        (None, "None must be a string"),
    ],
)
def test_bad_values_name_the_value(value, words):
    (error,) = label_value_errors("node_selector.pool", value)
    assert words in error.message


def test_a_map_reports_every_bad_entry():
    errors = label_map_errors("node_selector", {"ok": "fine", "bad key": "v", "k": "a,b"})
    assert [e.field for e in errors] == ["node_selector.bad key", "node_selector.k"]
    assert "must be a mapping" in label_map_errors("node_selector", "a=b")[0].message


@pytest.mark.parametrize(
    "selector",
    [
        None,
        "",
        "platform.io/pool=main",
        "a==b,c!=d",
        "gpu in (a100, h100),zone notin (z1)",
        "!cordoned,ready",
        "a=",
    ],
)
def test_good_selector_strings(selector):
    assert label_selector_errors("node_selector", selector) == []


@pytest.mark.parametrize(
    "selector", ["=x", "a=b c", "a=b,,c", "a in (x, y z)", "Bad.Prefix/a=b", "a=b=c", 3]
)
def test_bad_selector_strings_name_the_option(selector):
    errors = label_selector_errors("node_selector", selector)
    assert errors and all(e.field.startswith("node_selector") for e in errors)


@given(st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?\Z"))
def test_every_tenant_namespace_passes(tenant):
    assert tenant_namespace_errors(namespace_name(tenant)) == []


@pytest.mark.parametrize(
    "namespace", ["../x", "kube-system", "tenant-", "tenant", "tenant-A", "default", "", 3]
)
def test_other_namespaces_are_refused(namespace):
    (error,) = tenant_namespace_errors(namespace, "namespaces[0]")
    assert error.field == "namespaces[0]" and repr(namespace) in error.message
