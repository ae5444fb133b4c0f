# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A published dataset version's Fluid cache on the fake cluster: its Dataset and
AlluxioRuntime made, kept equal to the options, removed with the version after the
mounted-guard (rules dataset-cache-source, dataset-cache-mount, dataset-cache-tier,
dataset-in-use)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import (
    parse_quantity,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets import cache, plan
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.service import DATASET_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.summary import (
    dataset_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ResourceNotFoundError,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.datasets.test_dataset_lifecycle import (
    NS,
    S3,
    bind,
    cluster,
    params,
)

FLUID = "data.fluid.io/v1alpha1"
NAME = "cache-imagenet-v1"


def staged(c: FakeCluster | None = None) -> FakeCluster:
    """A version staged without an ingest job, its claim Bound."""
    c = c or cluster()
    DATASET_FLOW.run(params(), c, False)
    bind(c)
    return c


def published(**cache_options):
    return params(state="published", source=S3, cache=cache_options)


def test_publishing_with_the_cache_makes_its_dataset_and_runtime_after_the_claim():
    c = staged()
    out = DATASET_FLOW.run(published(), c, False)
    assert out["writes"] == [
        "PersistentVolume/pvc-123 kept (Retain)",
        "PersistentVolume/tenant-alpha-dataset-imagenet-v1",
        "PersistentVolumeClaim/dataset-imagenet-v1",
        f"Dataset/{NAME}",
        f"AlluxioRuntime/{NAME}",
        "PersistentVolumeClaim/dataset-imagenet-v1-staging removed",
    ]
    assert out["cache"] == NAME
    assert (
        f"cached by Fluid Dataset and AlluxioRuntime {NAME}" in dataset_summary({}, out, False)[0]
    )
    dataset = c.get(FLUID, "Dataset", NAME, namespace=NS)
    labels = dataset["metadata"]["labels"]
    assert labels["platform.io/tenant"] == "alpha"
    assert labels["platform.io/managed-by"] == "gpucloud-platform"
    assert labels["platform.io/dataset"] == "imagenet"
    spec = dataset["spec"]
    assert spec["accessModes"] == ["ReadOnlyMany"]
    assert "nodeAffinity" not in spec and "placement" not in spec  # Fluid's defaults
    (mount,) = spec["mounts"]
    assert mount["mountPoint"] == S3["s3"] and mount["readOnly"] is True
    assert {o["name"]: o["valueFrom"]["secretKeyRef"] for o in mount["encryptOptions"]} == {
        "aws.accessKeyId": {"name": "platform-object-store", "key": "AWS_ACCESS_KEY_ID"},
        "aws.secretKey": {"name": "platform-object-store", "key": "AWS_SECRET_ACCESS_KEY"},
        "alluxio.underfs.s3.endpoint": {"name": "platform-object-store", "key": "AWS_ENDPOINT_URL"},
    }
    runtime = c.get(FLUID, "AlluxioRuntime", NAME, namespace=NS)
    assert runtime["spec"] == {
        "replicas": 1,
        "tieredstore": {"levels": [{"mediumtype": "MEM", "path": "/dev/shm", "quota": "2Gi"}]},
    }
    assert DATASET_FLOW.run(published(), c, False)["writes"] == []


def test_a_changed_option_applies_the_runtime_again_and_check_mode_says_so_without_writing():
    c = staged()
    DATASET_FLOW.run(published(), c, False)
    wanted = published(replicas=3, medium="SSD", path="/mnt/nvme0/cache", quota="500Gi")
    dry = FakeCluster(list(c.store.values()), dry_run=True)
    checked = DATASET_FLOW.run(wanted, dry, True)
    assert checked["writes"] == [f"AlluxioRuntime/{NAME} updated"] and checked["changed"]
    assert dry.get(FLUID, "AlluxioRuntime", NAME, namespace=NS)["spec"]["replicas"] == 1
    out = DATASET_FLOW.run(wanted, c, False)
    assert out["writes"] == checked["writes"]
    spec = c.get(FLUID, "AlluxioRuntime", NAME, namespace=NS)["spec"]
    assert spec["replicas"] == 3
    assert spec["tieredstore"]["levels"] == [
        {"mediumtype": "SSD", "path": "/mnt/nvme0/cache", "quota": "500Gi"}
    ]
    assert DATASET_FLOW.run(wanted, c, False)["writes"] == []


def test_a_version_published_without_the_cache_gets_it_on_a_later_run():
    c = staged()
    DATASET_FLOW.run(params(state="published"), c, False)
    out = DATASET_FLOW.run(published(), c, False)
    assert out["writes"] == [f"Dataset/{NAME}", f"AlluxioRuntime/{NAME}"]


def test_absent_removes_the_cache_first_and_not_while_a_pod_mounts_fluids_claim():
    c = staged()
    DATASET_FLOW.run(published(), c, False)
    # Fluid's controller makes a claim named after its Dataset; a pod mounting it counts.
    c.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train-0", "namespace": NS},
            "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": NAME}}]},
            "status": {"phase": "Running"},
        }
    )
    with pytest.raises(Refused, match=r"mounted by 1 unfinished pod\(s\) \(train-0\)"):
        DATASET_FLOW.run(params(state="absent"), c, False)
    assert c.get(FLUID, "Dataset", NAME, namespace=NS)
    c.delete("v1", "Pod", "train-0", namespace=NS)
    out = DATASET_FLOW.run(params(state="absent"), c, False)
    assert out["writes"] == [
        f"AlluxioRuntime/{NAME} removed",
        f"Dataset/{NAME} removed",
        "PersistentVolumeClaim/dataset-imagenet-v1 removed",
        "PersistentVolume/tenant-alpha-dataset-imagenet-v1 removed",
    ]
    assert c.get(FLUID, "Dataset", NAME, namespace=NS) is None
    assert c.get(FLUID, "AlluxioRuntime", NAME, namespace=NS) is None


class NoFluid(FakeCluster):
    """A cluster without Fluid's CRDs: its kinds are not discovered."""

    def get(self, api_version, kind, name, namespace=None):
        if api_version == FLUID:
            raise ResourceNotFoundError(f"No matches found for {kind}")
        return super().get(api_version, kind, name, namespace)


def test_without_fluid_the_cache_is_refused_and_absent_still_removes_the_version():
    c = NoFluid(list(staged().store.values()))
    with pytest.raises(Refused, match=r"no Dataset kind .* install Fluid first"):
        DATASET_FLOW.run(published(), c, False)
    assert c.get("v1", "PersistentVolumeClaim", "dataset-imagenet-v1-staging", namespace=NS)
    out = DATASET_FLOW.run(params(state="absent"), c, False)
    assert out["writes"] == ["PersistentVolumeClaim/dataset-imagenet-v1-staging removed"]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"state": "present", "cache": {}}, "cache: a version is cached once it is published"),
        ({"state": "published", "cache": {}}, "source: None: the cache mounts an S3 prefix"),
        (
            {"state": "published", "source": {"url": "https://x/y"}, "cache": {}},
            "source: {'url': 'https://x/y'}: the cache mounts an S3 prefix",
        ),
        (
            {"state": "published", "source": S3, "cache": {"medium": "SSD"}},
            "cache.path: is required with medium SSD",
        ),
        (
            {"state": "published", "source": S3, "cache": {"medium": "HDD", "path": "cache"}},
            "cache.path: 'cache' must be an absolute path",
        ),
        ({"state": "published", "source": S3, "cache": {"replicas": 0}}, "cache.replicas: 0"),
        ({"state": "published", "source": S3, "cache": {"quota": "lots"}}, "cache.quota: 'lots'"),
        ({"state": "published", "source": S3, "cache": {"medium": "NVME"}}, "cache.medium: 'NVME'"),
        ({"state": "published", "source": S3, "cache": {"size": "1Gi"}}, "cache: size: not one of"),
    ],
)
def test_bad_cache_options_are_named_before_anything_is_read(over, message):
    with pytest.raises(PlatformValidationError, match=message.replace("(", r"\(")):
        plan.parse_dataset(params(**over))


def test_absent_takes_the_cache_option_without_a_source():
    request = plan.parse_dataset(params(state="absent", cache={}))
    assert request.cache is None


SPECS = st.builds(
    dict,
    replicas=st.integers(min_value=1, max_value=64),
    medium=st.sampled_from(cache.MEDIUMS),
    path=st.sampled_from(["/dev/shm", "/mnt/nvme0/cache", "/var/lib/cache"]),
    quota=st.sampled_from(["1Gi", "20Gi", "500Gi", "2Ti", "1024Mi"]),
)


@settings(max_examples=60, deadline=None)
@given(first=SPECS, second=SPECS)
def test_any_cache_options_converge_in_one_run_and_never_hold_a_key(first, second):
    c = staged()
    DATASET_FLOW.run(published(**first), c, False)
    changed = DATASET_FLOW.run(published(**second), c, False)
    assert changed["writes"] in ([], [f"AlluxioRuntime/{NAME} updated"])
    # the same options, quotas compared as quantities (1Gi is 1024Mi)
    same = {**first, "quota": parse_quantity(first["quota"])} == {
        **second,
        "quota": parse_quantity(second["quota"]),
    }
    assert (changed["writes"] == []) == same
    assert DATASET_FLOW.run(published(**second), c, False)["writes"] == []
    (mount,) = c.get(FLUID, "Dataset", NAME, namespace=NS)["spec"]["mounts"]
    assert mount["readOnly"] is True
    assert all(
        set(o["valueFrom"]) == {"secretKeyRef"}
        and o["valueFrom"]["secretKeyRef"]["name"] == "platform-object-store"
        for o in mount["encryptOptions"]
    )
