# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every image a chart deploys with the roles' values comes from the image mirror when one
is set (platform_image_registry), and every chart keeps its own images when none is set.

IMAGES lists, per chart, each image the pinned chart can deploy with the roles' values
(read from the chart's values.yaml and templates at the version in docs/bring-up.md) and
the value that puts it under the mirror: a repository (or full reference) under
``<mirror>/`` with the image's upstream path, or a registry value the chart applies to
that image. The roles' values templates are rendered with ansible-playbook on localhost
(no cluster, no chart), once with a mirror and once without."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
MIRROR = "mirror.example.internal/gpucloud"

# chart -> (role, values template)
TEMPLATES = {
    "nvidia-device-plugin": ("nvidia_device_plugin", "values.yml.j2"),
    "dcgm-exporter": ("dcgm_exporter", "values.yml.j2"),
    "volcano": ("volcano", "values.yml.j2"),
    "cert-manager": ("kserve", "cert_manager_values.yml.j2"),
    "kserve-resources": ("kserve", "resources_values.yml.j2"),
    "csi-driver-nfs": ("storage", "nfs_values.yml.j2"),
    "ceph-csi-cephfs": ("storage", "cephfs_values.yml.j2"),
    "kube-prometheus-stack": ("monitoring", "prometheus_stack_values.yml.j2"),
    "loki": ("monitoring", "loki_values.yml.j2"),
    "alloy": ("monitoring", "alloy_values.yml.j2"),
    "fluid": ("fluid", "values.yml.j2"),
    "versitygw": ("object_store", "values.yml.j2"),
}

M = MIRROR
# chart -> [(image, value path, value under the mirror)]. kserve-crd has no image.
IMAGES: dict[str, list[tuple[str, str, str]]] = {
    # fluid 1.0.8: each image's imagePrefix (the chart's YAML anchors are read when it is
    # parsed, so each is set); Alluxio's own images are under alluxio/
    "fluid": [
        ("fluidcloudnative/fluid-crd-upgrader", "crdUpgrade.imagePrefix", f"{M}/fluidcloudnative"),
        (
            "fluidcloudnative/dataset-controller",
            "dataset.controller.imagePrefix",
            f"{M}/fluidcloudnative",
        ),
        (
            "fluidcloudnative/csi-node-driver-registrar",
            "csi.registrar.imagePrefix",
            f"{M}/fluidcloudnative",
        ),
        ("fluidcloudnative/fluid-csi", "csi.plugins.imagePrefix", f"{M}/fluidcloudnative"),
        (
            "fluidcloudnative/init-users",
            "runtime.alluxio.init.imagePrefix",
            f"{M}/fluidcloudnative",
        ),
        (
            "fluidcloudnative/alluxioruntime-controller",
            "runtime.alluxio.controller.imagePrefix",
            f"{M}/fluidcloudnative",
        ),
        ("alluxio/alluxio-dev", "runtime.alluxio.runtime.imagePrefix", f"{M}/alluxio"),
        ("alluxio/alluxio-dev (fuse)", "runtime.alluxio.fuse.imagePrefix", f"{M}/alluxio"),
        ("fluidcloudnative/fluid-webhook", "webhook.imagePrefix", f"{M}/fluidcloudnative"),
        (
            "fluidcloudnative/application-controller",
            "fluidapp.controller.imagePrefix",
            f"{M}/fluidcloudnative",
        ),
    ],
    # versitygw 0.4.1 (object_store_mode install): one image for the gateway, its admin API
    # and its accounts; the tag is pinned either way (the chart's default is "latest")
    "versitygw": [("versity/versitygw", "image.repository", f"{M}/versity/versitygw")],
    "nvidia-device-plugin": [
        # one image for the plugin, GFD, the config manager and the MPS control daemon
        ("nvidia/k8s-device-plugin", "image.repository", f"{M}/nvidia/k8s-device-plugin"),
        # the node-feature-discovery dependency is aliased nfd in the chart
        ("nfd/node-feature-discovery", "nfd.image.repository", f"{M}/nfd/node-feature-discovery"),
    ],
    "dcgm-exporter": [
        ("nvidia/k8s/dcgm-exporter", "image.repository", f"{M}/nvidia/k8s/dcgm-exporter"),
    ],
    "volcano": [
        (image, "basic.image_registry", M)
        for image in (
            "volcanosh/vc-scheduler",
            "volcanosh/vc-controller-manager",
            "volcanosh/vc-webhook-manager",  # admission and its init job
            "volcanosh/vc-agent",
            "volcanosh/vc-agent-scheduler",
        )
    ],
    "cert-manager": [
        (f"jetstack/cert-manager-{component}", "imageRegistry", M)
        for component in ("controller", "webhook", "cainjector", "startupapicheck", "acmesolver")
    ],
    "kserve-resources": [
        ("kserve/kserve-controller", "kserve.controller.image", f"{M}/kserve/kserve-controller"),
        (
            "brancz/kube-rbac-proxy",
            "kserve.controller.rbacProxyImage",
            f"{M}/brancz/kube-rbac-proxy:v0.18.0",
        ),
        ("kserve/storage-initializer", "kserve.storage.image", f"{M}/kserve/storage-initializer"),
        (
            "kserve/storage-initializer (local model job)",
            "kserve.localmodel.defaultJobImage",
            f"{M}/kserve/storage-initializer",
        ),
        ("kserve/agent", "kserve.agent.image", f"{M}/kserve/agent"),
        ("kserve/router", "kserve.router.image", f"{M}/kserve/router"),
        ("kserve/art-explainer", "kserve.servingruntime.art.image", f"{M}/kserve/art-explainer"),
    ],
    "csi-driver-nfs": [
        (f"sig-storage/{name}", f"image.{key}.repository", f"{M}/sig-storage/{name}")
        for key, name in (
            ("nfs", "nfsplugin"),
            ("csiProvisioner", "csi-provisioner"),
            ("csiResizer", "csi-resizer"),
            ("csiSnapshotter", "csi-snapshotter"),
            ("livenessProbe", "livenessprobe"),
            ("nodeDriverRegistrar", "csi-node-driver-registrar"),
            ("externalSnapshotter", "snapshot-controller"),
        )
    ]
    + [("sig-storage/* (base)", "image.baseRepo", M)],
    "ceph-csi-cephfs": [
        ("cephcsi/cephcsi", "nodeplugin.plugin.image.repository", f"{M}/cephcsi/cephcsi"),
        (
            "sig-storage/csi-node-driver-registrar",
            "nodeplugin.registrar.image.repository",
            f"{M}/sig-storage/csi-node-driver-registrar",
        ),
    ]
    + [
        (
            f"sig-storage/csi-{sidecar}",
            f"provisioner.{sidecar}.image.repository",
            f"{M}/sig-storage/csi-{sidecar}",
        )
        for sidecar in ("provisioner", "attacher", "resizer", "snapshotter")
    ],
    # global.imageRegistry: the chart's images and its subcharts' (they read global)
    "kube-prometheus-stack": [
        (image, "global.imageRegistry", M)
        for image in (
            "prometheus-operator/prometheus-operator",
            "prometheus-operator/admission-webhook",
            "jkroepke/kube-webhook-certgen",
            "prometheus-operator/prometheus-config-reloader",
            "prometheus/prometheus",
            "prometheus/alertmanager",
            "thanos/thanos",
            "busybox (CRD upgrade job)",
            "kubectl (CRD upgrade job)",
            "kube-state-metrics/kube-state-metrics",
            "prometheus/node-exporter",
            "brancz/kube-rbac-proxy (kube-state-metrics, node exporter)",
            "prometheus/busybox (node exporter init)",
            "grafana/grafana",
            "kiwigrid/k8s-sidecar (Grafana dashboards)",
            "library/busybox (Grafana init)",
            "curlimages/curl (Grafana dashboards download)",
            "grafana/grafana-image-renderer",
            "bats/bats (Grafana test)",
        )
    ],
    "loki": [
        (image, key, M)
        for image in (
            "grafana/loki",
            "nginxinc/nginx-unprivileged (gateway)",
            "grafana/loki-canary",
            "kiwigrid/k8s-sidecar (rules)",
            "grafana/loki-helm-test",
            "memcached, prom/memcached-exporter",
            "rancher/kubectl (volume resize job)",
        )
        for key in ("global.imageRegistry", "global.image.registry")
    ],
    "alloy": [
        ("grafana/alloy", "global.image.registry", M),
        ("prometheus-operator/prometheus-config-reloader", "global.image.registry", M),
    ],
}

CASES = [(chart, image, path, want) for chart, rows in IMAGES.items() for image, path, want in rows]


def dig(values: dict, path: str):
    """The value at a dotted path, or KeyError."""
    node = values
    for key in path.split("."):
        if not isinstance(node, dict):
            raise KeyError(path)
        node = node[key]
    return node


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """{"mirror": {chart: values}, "none": {chart: values}}, from the roles' templates
    with the roles' defaults."""
    tmp = tmp_path_factory.mktemp("mirrors")
    roles = sorted({role for role, _template in TEMPLATES.values()})
    charts = {
        chart: "{{ lookup('ansible.builtin.template', '%s') | from_yaml }}"
        % (ROOT / "roles" / role / "templates" / template)
        for chart, (role, template) in TEMPLATES.items()
    }
    tasks = [
        {
            "name": f"Defaults of {role}",
            "ansible.builtin.include_vars": {
                "file": str(ROOT / "roles" / role / "defaults" / "main.yml")
            },
        }
        for role in roles
    ]
    for case, registry in (("mirror", MIRROR), ("none", "")):
        tasks.append(
            {
                "name": f"Values ({case})",
                "ansible.builtin.copy": {
                    "content": "{{ gpucloud_test_values | to_json }}",
                    "dest": str(tmp / f"{case}.json"),
                    "mode": "0600",
                },
                "vars": {"platform_image_registry": registry, "gpucloud_test_values": charts},
            }
        )
    playbook = tmp / "play.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Render the chart values",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "tasks": tasks,
                }
            ]
        )
    )
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.run(
        [
            BIN / "ansible-playbook",
            "-i",
            "localhost,",
            str(playbook),
            "-e",
            json.dumps({"ansible_python_interpreter": sys.executable}),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return {case: json.loads((tmp / f"{case}.json").read_text()) for case in ("mirror", "none")}


def test_every_chart_with_images_is_listed():
    assert set(IMAGES) == set(TEMPLATES)


@pytest.mark.parametrize(
    ("chart", "image", "path", "want"),
    CASES,
    ids=[f"{chart}:{image}" for chart, image, _path, _want in CASES],
)
def test_an_image_comes_from_the_mirror_when_one_is_set(rendered, chart, image, path, want):
    values = rendered["mirror"][chart]
    try:
        got = dig(values, path)
    except KeyError:
        pytest.fail(f"{chart}: {image} is not redirected: no {path} in {json.dumps(values)}")
    assert got == want, f"{chart}: {image}: {path} is {got!r}"


@pytest.mark.parametrize(
    ("chart", "image", "path", "want"),
    CASES,
    ids=[f"{chart}:{image}" for chart, image, _path, _want in CASES],
)
def test_a_chart_keeps_its_own_images_without_a_mirror(rendered, chart, image, path, want):
    with pytest.raises(KeyError):
        dig(rendered["none"][chart], path)


def test_volcano_keeps_its_fixed_image_addons_off(rendered):
    """The volcano chart's metrics add-ons (Prometheus, Grafana, kube-state-metrics) have
    fixed images no registry value moves; the role keeps them off."""
    for case in ("mirror", "none"):
        assert rendered[case]["volcano"]["custom"]["metrics_enable"] is False


def test_versitygw_runs_the_pinned_tag_with_its_admin_api_and_accounts(rendered):
    """The chart's image tag defaults to "latest"; the role pins it, and turns on the admin
    API and the accounts that gpucloud.platform.tenant_object_store speaks to."""
    tag = yaml.safe_load((ROOT / "roles" / "object_store" / "defaults" / "main.yml").read_text())[
        "object_store_image_tag"
    ]
    for case in ("mirror", "none"):
        values = rendered[case]["versitygw"]
        assert values["image"]["tag"] == tag != "latest"
        assert values["admin"]["enabled"] is True and values["iam"]["enabled"] is True
        assert values["auth"]["existingSecret"] == "platform-object-store-root"
