# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule pod-identity: a job's pods run as ``service_account`` and pull their images with
``image_pull_secrets``, on every task template, and only when given; bad names are refused
naming the option."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import submit
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.kinds import KINDS
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.request import JobRequest
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.request_rules import (
    pod_identity_errors,
    request_errors,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    SINGLE,
    vcjob_params,
)

BASE = {"tenant": "alpha", "queue": "tenant-alpha-algo", "queue_type": "team", "image": "img:v1"}
COMMAND = {"pytorch_ddp": ["train.py"], "mpi": ["python", "train.py"], "ray": None}
IDENTITY = {"service_account": "trainer", "image_pull_secrets": ["alpha-registry", "mirror.creds"]}


def job(kind="single", **kw):
    params = {**BASE, "name": "j1", "kind": kind, "command": COMMAND.get(kind, ["run"]), **kw}
    return build_job(params)


def pod_specs(manifest):
    return [task["template"]["spec"] for task in manifest["spec"]["tasks"]]


def refused(**kw):
    with pytest.raises(PlatformValidationError) as info:
        job(**kw)
    return {e.field: e.message for e in info.value.errors}


@pytest.mark.parametrize("kind", KINDS)
def test_without_the_options_no_pod_names_an_identity(kind):
    for spec in pod_specs(job(kind)):
        assert "serviceAccountName" not in spec
        assert "imagePullSecrets" not in spec


@pytest.mark.parametrize("kind", KINDS)
def test_every_task_template_runs_as_the_account_with_the_secrets_in_order(kind):
    specs = pod_specs(job(kind, **IDENTITY))
    assert len(specs) >= 1
    for spec in specs:
        assert spec["serviceAccountName"] == "trainer"
        assert spec["imagePullSecrets"] == [{"name": "alpha-registry"}, {"name": "mirror.creds"}]


def test_each_option_alone_renders_only_its_own_field():
    (account,) = pod_specs(job(service_account="trainer"))
    assert account["serviceAccountName"] == "trainer" and "imagePullSecrets" not in account
    (secrets,) = pod_specs(job(image_pull_secrets=["alpha-registry"]))
    assert secrets["imagePullSecrets"] == [{"name": "alpha-registry"}]
    assert "serviceAccountName" not in secrets
    (empty,) = pod_specs(job(image_pull_secrets=[]))
    assert "imagePullSecrets" not in empty


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"service_account": "Trainer"}, "service_account", "not a DNS-1123 subdomain"),
        ({"service_account": ""}, "service_account", "non-empty string"),
        ({"service_account": "a" * 254}, "service_account", "at most 253"),
        ({"service_account": 7}, "service_account", "non-empty string"),
        ({"image_pull_secrets": ["ok", "Not_OK"]}, "image_pull_secrets[1]", "DNS-1123"),
        ({"image_pull_secrets": [None]}, "image_pull_secrets[0]", "non-empty string"),
        ({"image_pull_secrets": ["a", "b", "a"]}, "image_pull_secrets[2]", "named twice"),
        ({"image_pull_secrets": {"name": "a"}}, "image_pull_secrets", "must be a list"),
    ],
)
def test_a_bad_identity_is_refused_naming_the_option(kw, field, words):
    errors = refused(**kw)
    assert list(errors) == [field]
    assert words in errors[field]


def test_a_string_for_image_pull_secrets_is_refused_not_read_as_characters():
    errors = refused(image_pull_secrets="regcred")
    assert list(errors) == ["image_pull_secrets"]
    assert "'regcred' must be a list of Secret names" in errors["image_pull_secrets"]
    assert "one Secret is a list of one" in errors["image_pull_secrets"]


def test_the_duplicate_names_its_first_place():
    errors = refused(image_pull_secrets=["a", "b", "b"])
    assert errors == {
        "image_pull_secrets[2]": "'b' is named twice (also image_pull_secrets[1]); "
        "name each Secret once"
    }


def test_both_options_refused_at_once_with_the_other_rules():
    req = JobRequest.from_mapping(
        {
            **BASE,
            "name": "j1",
            "kind": "single",
            "command": ["run"],
            "replicas": 0,
            "service_account": "Bad",
            "image_pull_secrets": "x",
        }
    )
    fields = [e.field for e in request_errors(req)]
    assert {"replicas", "service_account", "image_pull_secrets"} <= set(fields)


def test_nothing_given_is_nothing_to_refuse():
    assert pod_identity_errors(None, None) == []
    assert pod_identity_errors(None, []) == []
    assert pod_identity_errors("default", ("a", "b.c")) == []


def test_vcjob_builds_the_identity_into_the_job_it_checks():
    checked = submit.check_submission(vcjob_params(**{**SINGLE, **IDENTITY}))
    (spec,) = pod_specs(checked)
    assert spec["serviceAccountName"] == "trainer"
    assert spec["imagePullSecrets"] == [{"name": "alpha-registry"}, {"name": "mirror.creds"}]


def test_vcjob_refuses_a_string_before_connecting():
    with pytest.raises(PlatformValidationError) as info:
        submit.check_submission(vcjob_params(**{**SINGLE, "image_pull_secrets": "regcred"}))
    assert [e.field for e in info.value.errors] == ["image_pull_secrets"]


@pytest.mark.parametrize(
    ("option", "value", "field"),
    [
        ("service_account", "trainer", "serviceAccountName"),
        ("image_pull_secrets", ["alpha-registry"], "imagePullSecrets"),
    ],
)
def test_with_a_manifest_the_options_are_refused_not_dropped(option, value, field):
    manifest = {"metadata": {"name": "m"}, "spec": {"tasks": []}}
    given = vcjob_params(**{**SINGLE, "kind": None, "manifest": manifest, option: value})
    errors = submit.option_errors(given)
    assert [e.field for e in errors] == [option]
    assert field in errors[0].message
    # Left at its default, the option says nothing: a manifest is not refused for it.
    assert (
        submit.option_errors(vcjob_params(**{**SINGLE, "kind": None, "manifest": manifest})) == []
    )
