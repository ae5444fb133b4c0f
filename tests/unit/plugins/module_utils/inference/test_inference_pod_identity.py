# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule inference-pod-identity: a model service's predictor pods, the canaries' and the
Knative predictor's too, run as ``service_account`` and pull their images with
``image_pull_secrets``, only when given; bad names are refused naming the option, and the
rollout actions keep what the live service runs with."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import (
    inputs,
    live,
    manifests,
    rollout,
    service,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.render import render
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.spec import view
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    make_spec,
    params,
    tenant_cluster,
)

IDENTITY = {"service_account": "model-reader", "image_pull_secrets": ("alpha-registry", "mirror")}
SECRETS = [{"name": "alpha-registry"}, {"name": "mirror"}]
HISTORY = [{"version": "v1", "storage_uri": "s3://models/llama/v1", "format": "vllm"}]


def isvc(spec):
    return manifests.inference_service(
        spec, DEFAULT_CLASSES[spec.job_class], "subscription", HISTORY
    )


def predictors(manifest):
    """Every predictor of the InferenceService: the stable one, then each canary's."""
    body = manifest["spec"]
    return [body["predictor"], *(c["predictor"] for c in body.get("canary") or [])]


def refused_fields(given):
    with pytest.raises(PlatformValidationError) as excinfo:
        inputs.validate_service(given)
    return {e.field: e.message for e in excinfo.value.errors}


@pytest.mark.parametrize(
    "spec",
    [
        make_spec(canaries=[canary("v2", 20), canary("v3", 10)]),
        make_spec(mode="knative"),
        make_spec(canaries=[canary("v2", 10)], mode="knative"),
    ],
    ids=["standard-canaries", "knative", "knative-canary"],
)
def test_without_the_options_no_predictor_names_an_identity(spec):
    for predictor in predictors(isvc(spec)):
        assert "serviceAccountName" not in predictor
        assert "imagePullSecrets" not in predictor


def test_the_stable_predictor_and_every_canary_carry_the_identity():
    spec = replace(make_spec(canaries=[canary("v2", 20), canary("v3", 10)]), **IDENTITY)
    found = predictors(isvc(spec))
    assert len(found) == 3
    for predictor in found:
        assert predictor["serviceAccountName"] == "model-reader"
        assert predictor["imagePullSecrets"] == SECRETS


@pytest.mark.parametrize("canaries", [[], [canary("v2", 10)]])
def test_the_knative_predictor_carries_the_identity(canaries):
    spec = replace(make_spec(canaries=canaries, mode="knative"), **IDENTITY)
    (predictor,) = predictors(isvc(spec))
    assert predictor["serviceAccountName"] == "model-reader"
    assert predictor["imagePullSecrets"] == SECRETS


def test_each_option_alone_renders_only_its_own_field():
    (account,) = predictors(isvc(replace(make_spec(), service_account="model-reader")))
    assert account["serviceAccountName"] == "model-reader" and "imagePullSecrets" not in account
    (secrets,) = predictors(isvc(replace(make_spec(), image_pull_secrets=("alpha-registry",))))
    assert secrets["imagePullSecrets"] == [{"name": "alpha-registry"}]
    assert "serviceAccountName" not in secrets


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"service_account": "Model_Reader"}, "service_account", "not a DNS-1123 subdomain"),
        ({"service_account": ""}, "service_account", "non-empty string"),
        ({"image_pull_secrets": ["ok", "Bad"]}, "image_pull_secrets[1]", "DNS-1123"),
        ({"image_pull_secrets": ["a", "a"]}, "image_pull_secrets[1]", "named twice"),
        ({"image_pull_secrets": "regcred"}, "image_pull_secrets", "must be a list"),
    ],
)
def test_a_bad_identity_is_refused_naming_the_option(extra, field, words):
    errors = refused_fields(params(**extra))
    assert list(errors) == [field]
    assert words in errors[field]


def test_a_string_for_image_pull_secrets_is_refused_not_read_as_characters():
    errors = refused_fields(params(image_pull_secrets="regcred"))
    assert errors == {
        "image_pull_secrets": "'regcred' must be a list of Secret names, for example "
        "[registry-credentials]; one Secret is a list of one"
    }


def test_a_good_identity_passes_and_absent_checks_nothing():
    inputs.validate_service(params(service_account="model-reader", image_pull_secrets=["a.b"]))
    inputs.validate_service(params(state="absent", service_account="Bad", model=None, queue=None))


def test_the_filter_renders_the_identity_and_refuses_a_string():
    given = {
        "name": "llm",
        "tenant": "alpha",
        "queue": "tenant-alpha-research",
        "queue_type": "team",
        "model": {"version": "v1", "format": "vllm", "storage_uri": "s3://m/v1", "gpus": 1},
        "canaries": [canary("v2", 10)],
        "service_account": "model-reader",
        "image_pull_secrets": ["alpha-registry", "mirror"],
    }
    service_obj = render(given)[0]
    for predictor in predictors(service_obj):
        assert predictor["serviceAccountName"] == "model-reader"
        assert predictor["imagePullSecrets"] == SECRETS
    plain = render({k: v for k, v in given.items() if k not in IDENTITY})[0]
    assert all("serviceAccountName" not in p for p in predictors(plain))
    with pytest.raises(PlatformValidationError) as excinfo:
        render({**given, "image_pull_secrets": "alpha-registry"})
    assert [e.field for e in excinfo.value.errors] == ["image_pull_secrets"]


@pytest.mark.parametrize(
    "spec",
    [
        replace(make_spec(canaries=[canary("v2", 20)]), **IDENTITY),
        replace(make_spec(mode="knative"), **IDENTITY),
        replace(make_spec(), service_account="model-reader"),
    ],
    ids=["standard", "knative", "account-only"],
)
def test_the_live_service_gives_its_identity_back(spec):
    assert live.spec_from_live(isvc(spec)) == spec


def test_the_diff_shows_the_identity():
    shown = view(replace(make_spec(), **IDENTITY), [])
    assert shown["service_account"] == "model-reader"
    assert shown["image_pull_secrets"] == ["alpha-registry", "mirror"]
    assert view(make_spec(), [])["image_pull_secrets"] == []


def _deployed_service(cluster):
    (obj,) = cluster.objects("InferenceService")
    return obj


def test_a_deploy_writes_the_identity_and_a_rollout_step_keeps_it():
    cluster = tenant_cluster()
    identity = {"service_account": "model-reader", "image_pull_secrets": ["alpha-registry"]}
    service.run_service(params(canaries=[canary("v2", 20)], **identity), cluster, False)
    for predictor in predictors(_deployed_service(cluster)):
        assert predictor["serviceAccountName"] == "model-reader"
        assert predictor["imagePullSecrets"] == [{"name": "alpha-registry"}]
    step = params(action="step", model=None, queue=None, traffic={"v2": 50})
    service.run_service(step, cluster, False)
    stepped = _deployed_service(cluster)
    assert stepped["spec"]["canary"][0]["trafficPercent"] == 50
    for predictor in predictors(stepped):
        assert predictor["serviceAccountName"] == "model-reader"
        assert predictor["imagePullSecrets"] == [{"name": "alpha-registry"}]


def test_a_new_deploy_without_the_identity_removes_it_and_says_so():
    cluster = tenant_cluster()
    service.run_service(params(service_account="model-reader"), cluster, False)
    ask = rollout.parse_service(params())
    live_obj = _deployed_service(cluster)
    planned = rollout.plan_service(
        ask,
        rollout.ServiceFacts(
            service=(live_obj,),
            hpa=(),
            policy=tuple(cluster.objects("NetworkPolicy")),
            router=(),
            queue_list=tuple(
                o
                for o in cluster.objects("ConfigMap")
                if o["metadata"]["name"] == "platform-queues"
            ),
            namespace=tuple(cluster.objects("Namespace")),
            queues=tuple((q["metadata"]["name"], q) for q in cluster.objects("Queue")),
            graphs=(),
        ),
    )
    assert planned.before["service_account"] == "model-reader"
    assert planned.after["service_account"] is None
    assert [w["kind"] for w in planned.writes] == ["InferenceService"]
    assert "serviceAccountName" not in planned.writes[0]["spec"]["predictor"]
