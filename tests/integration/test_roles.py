# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bring-up roles against the local cluster.

No chart repository is reachable and there is no GPU here, so the chart roles
install the stand-in charts of tests/charts/ (same names and values interface
as the upstream charts; each records its values in a ConfigMap and runs one
placeholder pod) into the test's namespace. That proves the wiring: values,
image mirrors, upgrade on a version change, skipping with one line, waiting,
and a second run that changes nothing.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHARTS = ROOT / "tests" / "charts"
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
MIRROR = "mirror.example.invalid"


def helm_binary() -> str:
    found = sorted(
        glob.glob(os.path.expanduser("~/.cache/gpucloud-localcluster/bin/*/helm")),
        key=os.path.getmtime,
    )
    path = found[-1] if found else shutil.which("helm")
    if not path:
        pytest.skip("no helm binary (tools/localcluster builds one)")
    return path


class Run:
    """One ansible-playbook run, read from the json callback."""

    def __init__(self, proc: subprocess.CompletedProcess[str]):
        self.proc = proc
        try:
            self.data = json.loads(proc.stdout[proc.stdout.index("{") :])
        except ValueError:
            raise AssertionError(
                f"no JSON from ansible-playbook:\n{proc.stdout}\n{proc.stderr}"
            ) from None

    def stats(self, host: str = "localhost") -> dict[str, int]:
        return self.data["stats"][host]

    @property
    def changed(self) -> int:
        return sum(s["changed"] for s in self.data["stats"].values())

    @property
    def failed(self) -> int:
        return sum(s["failures"] + s["unreachable"] for s in self.data["stats"].values())

    def results(self):
        for play in self.data["plays"]:
            for task in play["tasks"]:
                for host, res in task["hosts"].items():
                    yield task["task"]["name"], host, res

    def messages(self) -> list[str]:
        out = []
        for _task, _host, res in self.results():
            msg = res.get("msg")
            if isinstance(msg, list):
                out.extend(str(m) for m in msg)
            elif msg:
                out.append(str(msg))
        return out

    def fact(self, name: str) -> Any:
        value = None
        for _task, _host, res in self.results():
            facts = res.get("ansible_facts") or {}
            if name in facts:
                value = facts[name]
        return value


def run_role(
    tmp_path: Path,
    kubeconfig: str,
    role: str,
    extra: dict[str, Any],
    tasks_from: str | None = None,
) -> Run:
    role_line = {"role": f"gpucloud.platform.{role}"}
    play: dict[str, Any] = {
        "name": f"Run {role}",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "roles": [role_line],
    }
    if tasks_from:
        play.pop("roles")
        play["tasks"] = [
            {
                "name": "Run the entry point",
                "ansible.builtin.include_role": {
                    "name": role_line["role"],
                    "tasks_from": tasks_from,
                },
            }
        ]
    book = tmp_path / f"{role}.yml"
    book.write_text(yaml.safe_dump([play]))
    varfile = tmp_path / "vars.json"
    varfile.write_text(
        json.dumps(
            {
                "platform_kubeconfig": str(kubeconfig),
                "platform_helm_binary": helm_binary(),
                "platform_helm_probe_timeout": 10,
                "platform_helm_wait_timeout": "2m0s",
                # As the local inventory: skip what no repository serves; one test is strict.
                "platform_helm_strict": False,
                "ansible_python_interpreter": str(ROOT / ".venv" / "bin" / "python"),
                **extra,
            }
        )
    )
    return ansible_playbook(kubeconfig, "-i", "localhost,", str(book), "-e", f"@{varfile}")


def ansible_playbook(kubeconfig: str, *args: str, timeout: int = 600) -> Run:
    """One ansible-playbook run from the checkout against ``kubeconfig``, read as JSON."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_NOCOLOR": "1",
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
    }
    proc = subprocess.run(
        [str(PLAYBOOK), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(proc)


def chart(name: str) -> str:
    return str(CHARTS / name)


def standin_values(api_client, namespace: str, release: str) -> dict[str, Any]:
    from kubernetes import client

    cm = client.CoreV1Api(api_client).read_namespaced_config_map(f"{release}-standin", namespace)
    return {
        "chart": cm.data["chart"],
        "image": cm.data["image"],
        "values": json.loads(base64.b64decode(cm.data["values.b64"])),
    }


def helm_releases(namespace: str, kubeconfig: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [helm_binary(), "list", "-n", namespace, "-o", "json", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out or "[]")


# --- chart roles --------------------------------------------------------------


def test_device_plugin_values_mirror_and_idempotency(tmp_path, kubeconfig, api_client, namespace):
    extra = {
        "nvidia_device_plugin_chart_ref": chart("nvidia-device-plugin"),
        "nvidia_device_plugin_chart_repo_url": "",
        "nvidia_device_plugin_namespace": namespace,
        "platform_image_registry": MIRROR,
        "nvidia_device_plugin_mig_strategy": "mixed",
        "nvidia_device_plugin_time_slicing_replicas": 4,
        "nvidia_device_plugin_gfd_enabled": False,
    }
    first = run_role(tmp_path, kubeconfig, "nvidia_device_plugin", extra)
    assert first.failed == 0, first.messages()
    assert first.changed >= 1
    summary = first.fact("platform_helm_summary")
    assert summary[-1]["action"] == "installed"
    assert summary[-1]["version"] == "0.20.0"

    got = standin_values(api_client, namespace, "nvidia-device-plugin")
    assert got["chart"] == "nvidia-device-plugin-0.20.0"
    assert got["image"].startswith(f"{MIRROR}/nvidia/k8s-device-plugin:")
    values = got["values"]
    assert values["migStrategy"] == "mixed"
    assert values["gfd"]["enabled"] is False
    config = yaml.safe_load(values["config"]["map"][values["config"]["default"]])
    assert config["flags"]["migStrategy"] == "mixed"
    assert config["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 4}
    ]
    assert values["nfd"]["image"]["repository"].startswith(MIRROR + "/")

    second = run_role(tmp_path, kubeconfig, "nvidia_device_plugin", extra)
    assert second.failed == 0, second.messages()
    assert second.changed == 0
    assert second.fact("platform_helm_summary")[-1]["action"] == "unchanged"

    # A changed value upgrades the release in place.
    third = run_role(
        tmp_path,
        kubeconfig,
        "nvidia_device_plugin",
        {**extra, "nvidia_device_plugin_time_slicing_replicas": 0},
    )
    assert third.changed >= 1
    values = standin_values(api_client, namespace, "nvidia-device-plugin")["values"]
    assert "sharing" not in yaml.safe_load(values["config"]["map"]["platform"])


def test_upgrade_on_chart_version_change(tmp_path, kubeconfig, api_client, namespace):
    base = {
        "nvidia_device_plugin_chart_repo_url": "",
        "nvidia_device_plugin_namespace": namespace,
    }
    first = run_role(
        tmp_path,
        kubeconfig,
        "nvidia_device_plugin",
        {**base, "nvidia_device_plugin_chart_ref": chart("nvidia-device-plugin")},
    )
    assert first.failed == 0, first.messages()

    newer = tmp_path / "charts" / "nvidia-device-plugin"
    shutil.copytree(CHARTS / "nvidia-device-plugin", newer)
    meta = yaml.safe_load((newer / "Chart.yaml").read_text())
    meta["version"] = "0.20.3"
    (newer / "Chart.yaml").write_text(yaml.safe_dump(meta))

    upgraded = run_role(
        tmp_path,
        kubeconfig,
        "nvidia_device_plugin",
        {
            **base,
            "nvidia_device_plugin_chart_ref": str(newer),
            "nvidia_device_plugin_chart_version": "0.20.3",
        },
    )
    assert upgraded.failed == 0, upgraded.messages()
    assert upgraded.fact("platform_helm_summary")[-1]["action"] == "upgraded from 0.20.0"
    assert (
        standin_values(api_client, namespace, "nvidia-device-plugin")["chart"]
        == "nvidia-device-plugin-0.20.3"
    )
    releases = helm_releases(namespace, kubeconfig)
    assert [r["chart"] for r in releases] == ["nvidia-device-plugin-0.20.3"]
    assert releases[0]["revision"] == "2"


def test_unreachable_chart_is_skipped_with_one_line(tmp_path, kubeconfig, namespace):
    missing = str(tmp_path / "no-such-chart.tgz")
    run = run_role(
        tmp_path,
        kubeconfig,
        "dcgm_exporter",
        {
            "dcgm_exporter_chart_ref": missing,
            "dcgm_exporter_chart_repo_url": "",
            "dcgm_exporter_namespace": namespace,
        },
    )
    assert run.failed == 0, run.messages()
    assert run.changed == 0
    lines = [m for m in run.messages() if m.startswith("dcgm_exporter: skipped — ")]
    assert len(lines) == 1
    assert "\n" not in lines[0]
    assert f"chart dcgm-exporter 4.8.2 not reachable at {missing}" in lines[0]
    assert "set dcgm_exporter_chart_ref" in lines[0]
    assert helm_releases(namespace, kubeconfig) == []


def test_strict_mode_fails_the_play_on_an_unreachable_chart(tmp_path, kubeconfig, namespace):
    """platform_helm_strict (the default outside the local inventory): the play fails
    naming the chart and the switch, and nothing is installed."""
    missing = str(tmp_path / "no-such-chart.tgz")
    run = run_role(
        tmp_path,
        kubeconfig,
        "dcgm_exporter",
        {
            "dcgm_exporter_chart_ref": missing,
            "dcgm_exporter_chart_repo_url": "",
            "dcgm_exporter_namespace": namespace,
            "platform_helm_strict": True,
        },
    )
    assert run.failed == 1, run.messages()
    failure = next(m for m in run.messages() if "platform_helm_strict is true" in m)
    assert f"chart dcgm-exporter 4.8.2 not reachable at {missing}" in failure
    assert helm_releases(namespace, kubeconfig) == []


def test_fluid_is_off_unless_enabled_then_skipped_with_one_line_or_failed_when_strict(
    tmp_path, kubeconfig, namespace
):
    """Fluid's chart is not reachable here: enabled, the role skips it with one line,
    and under platform_helm_strict the play fails naming the chart."""
    missing = str(tmp_path / "no-such-chart.tgz")
    base = {
        "fluid_chart_ref": missing,
        "fluid_chart_repo_url": "",
        "fluid_namespace": namespace,
    }
    off = run_role(tmp_path, kubeconfig, "fluid", base)
    assert off.failed == 0 and not [m for m in off.messages() if m.startswith("fluid: ")]
    run = run_role(tmp_path, kubeconfig, "fluid", {**base, "fluid_enabled": True})
    assert run.failed == 0 and run.changed == 0, run.messages()
    (line,) = [m for m in run.messages() if m.startswith("fluid: skipped — ")]
    assert f"chart fluid 1.0.8 not reachable at {missing}" in line and "set fluid_chart_ref" in line
    strict = run_role(
        tmp_path, kubeconfig, "fluid", {**base, "fluid_enabled": True, "platform_helm_strict": True}
    )
    assert strict.failed == 1, strict.messages()
    failure = next(m for m in strict.messages() if "platform_helm_strict is true" in m)
    assert f"chart fluid 1.0.8 not reachable at {missing}" in failure
    assert helm_releases(namespace, kubeconfig) == []


def test_object_store_install_skipped_with_one_line_or_failed_when_strict(
    tmp_path, kubeconfig, namespace, api_client
):
    """versitygw's chart is not reachable here: object_store_mode install skips it with one
    line and writes nothing (no root keys, the connection left as it was); under
    platform_helm_strict the play fails naming the chart."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)

    def connection_version() -> str | None:
        try:
            secret = core.read_namespaced_secret("platform-object-store", "platform-system")
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return secret.metadata.resource_version

    missing = str(tmp_path / "no-such-chart.tgz")
    base = {
        "object_store_mode": "install",
        "object_store_chart_ref": missing,
        "object_store_chart_repo_url": "",
        "object_store_namespace": namespace,
    }
    before = connection_version()
    external = run_role(tmp_path, kubeconfig, "object_store", {"object_store_endpoint": ""})
    assert external.failed == 0 and external.changed == 0, external.messages()
    (entry,) = external.fact("object_store_summary")
    assert entry["action"] == "skipped" and entry["reason"] == "object_store_endpoint is not set"
    run = run_role(tmp_path, kubeconfig, "object_store", base)
    assert run.failed == 0 and run.changed == 0, run.messages()
    (line,) = [m for m in run.messages() if m.startswith("object_store: skipped — ")]
    assert f"chart versitygw 0.4.1 not reachable at {missing}" in line
    assert "set object_store_chart_ref" in line
    strict = run_role(tmp_path, kubeconfig, "object_store", {**base, "platform_helm_strict": True})
    assert strict.failed == 1, strict.messages()
    failure = next(m for m in strict.messages() if "platform_helm_strict is true" in m)
    assert f"chart versitygw 0.4.1 not reachable at {missing}" in failure
    secrets = {s.metadata.name for s in core.list_namespaced_secret(namespace).items}
    assert "platform-object-store-root" not in secrets, secrets
    assert connection_version() == before
    assert helm_releases(namespace, kubeconfig) == []


def test_local_chart_of_another_version_is_skipped(tmp_path, kubeconfig, namespace):
    run = run_role(
        tmp_path,
        kubeconfig,
        "dcgm_exporter",
        {
            "dcgm_exporter_chart_ref": chart("dcgm-exporter"),
            "dcgm_exporter_chart_repo_url": "",
            "dcgm_exporter_chart_version": "4.9.0",
            "dcgm_exporter_namespace": namespace,
        },
    )
    assert run.failed == 0, run.messages()
    line = next(m for m in run.messages() if m.startswith("dcgm_exporter: skipped — "))
    assert "holds chart dcgm-exporter 4.8.2, not dcgm-exporter 4.9.0" in line
    assert helm_releases(namespace, kubeconfig) == []


def test_disabled_role_does_nothing(tmp_path, kubeconfig, namespace):
    run = run_role(
        tmp_path,
        kubeconfig,
        "dcgm_exporter",
        {
            "dcgm_exporter_enabled": False,
            "dcgm_exporter_chart_ref": chart("dcgm-exporter"),
            "dcgm_exporter_chart_repo_url": "",
            "dcgm_exporter_namespace": namespace,
        },
    )
    assert run.failed == 0
    assert run.changed == 0
    assert helm_releases(namespace, kubeconfig) == []


@pytest.mark.parametrize(
    ("role", "extra", "message"),
    [
        (
            "nvidia_device_plugin",
            {"nvidia_device_plugin_mig_strategy": "bogus"},
            "nvidia_device_plugin_mig_strategy",
        ),
        (
            "nvidia_device_plugin",
            {"nvidia_device_plugin_time_slicing_replicas": "many"},
            "nvidia_device_plugin_time_slicing_replicas",
        ),
        ("volcano", {"volcano_deploy": "operator"}, "volcano_deploy"),
        ("kserve", {"kserve_deployment_mode": "Serverless"}, "kserve_deployment_mode"),
        ("gpu_node", {"gpu_node_preflight_mode": "loose"}, "gpu_node_preflight_mode"),
        (
            "storage",
            {
                "storage_classes": [
                    {"name": "x", "provisioner": "p", "access_mode": "ReadWriteSometimes"}
                ]
            },
            "access_mode",
        ),
    ],
)
def test_argument_spec_refuses_before_anything_is_touched(
    tmp_path, kubeconfig, namespace, role, extra, message
):
    run = run_role(
        tmp_path,
        kubeconfig,
        role,
        {
            "nvidia_device_plugin_chart_ref": chart("nvidia-device-plugin"),
            "nvidia_device_plugin_chart_repo_url": "",
            "nvidia_device_plugin_namespace": namespace,
            "gpu_node_label": False,
            **extra,
        },
    )
    assert run.failed == 1
    assert run.changed == 0
    assert any(message in m for m in run.messages()), run.messages()
    assert helm_releases(namespace, kubeconfig) == []


def test_volcano_chart_with_mirror_and_discovery(tmp_path, kubeconfig, api_client, namespace):
    extra = {
        "volcano_chart_ref": chart("volcano"),
        "volcano_chart_repo_url": "",
        "volcano_namespace": namespace,
        "volcano_image_registry": MIRROR,
        "volcano_network_topology_discovery": [
            {
                "source": "label",
                "config": {
                    "networkTopologyTypes": {
                        "gpuCluster": [
                            {"nodeLabel": "topology.volcano.sh/tor"},
                            {"nodeLabel": "kubernetes.io/hostname"},
                        ]
                    }
                },
            },
            {
                "source": "ufm",
                "interval": "10m",
                "config": {"endpoint": "https://ufm.example.invalid:443"},
            },
        ],
        "volcano_ufm_username": "admin",
        "volcano_ufm_password": "secret",
    }
    first = run_role(tmp_path, kubeconfig, "volcano", extra)
    assert first.failed == 0, first.messages()
    got = standin_values(api_client, namespace, "volcano")
    assert got["image"].startswith(f"{MIRROR}/volcanosh/vc-scheduler:")
    custom = got["values"]["custom"]
    assert custom["scheduler_metrics_enable"] is True
    assert custom["controller_metrics_enable"] is True
    conf = yaml.safe_load(custom["controller_config_override"])
    sources = {d["source"]: d for d in conf["networkTopologyDiscovery"]}
    assert set(sources) == {"label", "ufm"}
    assert sources["ufm"]["credentials"]["secretRef"] == {
        "name": "ufm-credentials",
        "namespace": namespace,
    }
    assert sources["ufm"]["interval"] == "10m"
    assert "credentials" not in sources["label"]

    from kubernetes import client

    secret = client.CoreV1Api(api_client).read_namespaced_secret("ufm-credentials", namespace)
    assert base64.b64decode(secret.data["username"]).decode() == "admin"
    assert base64.b64decode(secret.data["password"]).decode() == "secret"

    second = run_role(tmp_path, kubeconfig, "volcano", extra)
    assert second.failed == 0
    assert second.changed == 0


def test_volcano_refuses_roce_discovery(tmp_path, kubeconfig, namespace):
    run = run_role(
        tmp_path,
        kubeconfig,
        "volcano",
        {
            "volcano_chart_ref": chart("volcano"),
            "volcano_chart_repo_url": "",
            "volcano_namespace": namespace,
            "volcano_network_topology_discovery": [{"source": "roce", "config": {}}],
        },
    )
    assert run.failed == 1
    assert any(
        "source roce is not accepted: only label and ufm exist in Volcano 1.15" in m
        for m in run.messages()
    )
    assert helm_releases(namespace, kubeconfig) == []


def test_volcano_external_checks_the_running_volcano(tmp_path, kubeconfig):
    run = run_role(tmp_path, kubeconfig, "volcano", {"volcano_deploy": "external"})
    assert run.failed == 0, run.messages()
    assert run.changed == 0
    assert run.fact("volcano_summary")[0]["action"] == "checked"


def test_kserve_installs_cert_manager_first_in_standard_mode(
    tmp_path, kubeconfig, api_client, namespace
):
    extra = {
        "kserve_cert_manager_chart_ref": chart("cert-manager"),
        "kserve_cert_manager_chart_repo_url": "",
        "kserve_cert_manager_namespace": namespace,
        "kserve_crd_chart_ref": chart("kserve-crd"),
        "kserve_resources_chart_ref": chart("kserve-resources"),
        "kserve_namespace": namespace,
        "platform_image_registry": MIRROR,
        # The stand-in charts run no controller (the verification has its own test).
        "kserve_verify": False,
    }
    first = run_role(tmp_path, kubeconfig, "kserve", extra)
    assert first.failed == 0, first.messages()
    order = [e["item"].split(" ")[0] for e in first.fact("platform_helm_summary")]
    assert order == ["cert-manager", "kserve-crd", "kserve"]
    assert (
        standin_values(api_client, namespace, "cert-manager")["values"]["crds"]["enabled"] is True
    )
    resources = standin_values(api_client, namespace, "kserve")
    assert resources["values"]["kserve"]["controller"]["deploymentMode"] == "Standard"
    assert resources["image"].startswith(f"{MIRROR}/kserve/kserve-controller:")

    second = run_role(tmp_path, kubeconfig, "kserve", extra)
    assert second.changed == 0


def test_kserve_verifies_the_running_controller(tmp_path, kubeconfig, namespace):
    """The local cluster runs KServe's real controller outside Helm: kserve_install false
    verifies it (CRDs established, Standard mode) and makes the serving namespace; a
    KServe that is not where the role looks fails the play, naming what is missing."""
    found = run_role(tmp_path, kubeconfig, "kserve", {"kserve_install": False})
    assert found.failed == 0, found.messages()
    summary = found.fact("kserve_summary")
    assert [(e["component"], e["action"]) for e in summary] == [("kserve", "verified")]
    assert "Standard mode" in summary[0]["item"]
    missing = run_role(
        tmp_path, kubeconfig, "kserve", {"kserve_install": False, "kserve_namespace": namespace}
    )
    assert missing.failed == 1
    assert any(
        f"missing ConfigMap {namespace}/inferenceservice-config" in m for m in missing.messages()
    )


def test_kserve_knative_mode_names_its_prerequisites(tmp_path, kubeconfig, namespace):
    run = run_role(
        tmp_path,
        kubeconfig,
        "kserve",
        {"kserve_deployment_mode": "Knative", "kserve_namespace": namespace},
    )
    assert run.failed == 1
    assert any(
        "Knative Serving and a networking layer (Istio or Kourier)" in m for m in run.messages()
    )


def test_storage_drivers_and_classes(tmp_path, kubeconfig, api_client, namespace):
    from kubernetes import client

    classes = [
        {
            "name": f"{namespace}-datasets",
            "provisioner": "nfs.csi.k8s.io",
            "access_mode": "ReadOnlyMany",
            "parameters": {"server": "nfs.example.invalid", "share": "/datasets"},
            "reclaim_policy": "Retain",
        },
        {
            "name": f"{namespace}-checkpoints",
            "provisioner": "cephfs.csi.ceph.com",
            "access_mode": "ReadWriteMany",
            "allow_volume_expansion": True,
            "parameters": {"clusterID": "c1", "fsName": "cephfs"},
        },
    ]
    volumes = [
        {
            "name": f"{namespace}-lustre",
            "capacity": "100Ti",
            "host_path": "/lustre/datasets",
            "storage_class": f"{namespace}-static",
            "claim": {"namespace": namespace, "name": "datasets"},
        }
    ]
    extra = {
        "storage_nfs_chart_ref": chart("csi-driver-nfs"),
        "storage_nfs_chart_repo_url": "",
        "storage_nfs_namespace": namespace,
        "storage_cephfs_chart_ref": chart("ceph-csi-cephfs"),
        "storage_cephfs_chart_repo_url": "",
        "storage_cephfs_namespace": namespace,
        "storage_cephfs_cluster_id": "c1",
        "storage_cephfs_monitors": ["10.0.0.1:6789"],
        "storage_image_registry": MIRROR,
        "storage_classes": classes,
        "storage_static_volumes": volumes,
    }
    storage = client.StorageV1Api(api_client)
    core = client.CoreV1Api(api_client)
    try:
        first = run_role(tmp_path, kubeconfig, "storage", extra)
        assert first.failed == 0, first.messages()
        assert (
            standin_values(api_client, namespace, "csi-driver-nfs")["values"]["image"]["baseRepo"]
            == MIRROR
        )
        ceph = standin_values(api_client, namespace, "ceph-csi-cephfs")["values"]
        assert ceph["csiConfig"] == [{"clusterID": "c1", "monitors": ["10.0.0.1:6789"]}]
        assert ceph["storageClass"]["create"] is False
        # Every image of the chart under the mirror: the plugin and its sidecars.
        images = [
            ceph["nodeplugin"]["registrar"]["image"]["repository"],
            ceph["nodeplugin"]["plugin"]["image"]["repository"],
            *(
                ceph["provisioner"][c]["image"]["repository"]
                for c in ("provisioner", "attacher", "resizer", "snapshotter")
            ),
        ]
        assert all(i.startswith(f"{MIRROR}/") for i in images), images
        assert len(set(images)) == 6, images
        sc = storage.read_storage_class(f"{namespace}-datasets")
        assert sc.provisioner == "nfs.csi.k8s.io"
        assert sc.reclaim_policy == "Retain"
        assert sc.metadata.annotations["platform.io/access-mode"] == "ReadOnlyMany"
        assert storage.read_storage_class(f"{namespace}-checkpoints").allow_volume_expansion is True
        pv = core.read_persistent_volume(f"{namespace}-lustre")
        assert pv.spec.access_modes == ["ReadOnlyMany"]
        assert pv.spec.host_path.path == "/lustre/datasets"
        assert pv.spec.claim_ref.name == "datasets"

        second = run_role(tmp_path, kubeconfig, "storage", extra)
        assert second.failed == 0
        assert second.changed == 0
    finally:
        for c in classes:
            with contextlib.suppress(client.ApiException):
                storage.delete_storage_class(c["name"])
        with contextlib.suppress(client.ApiException):
            core.delete_persistent_volume(f"{namespace}-lustre")


def test_monitoring_stack_objects_and_logs(tmp_path, kubeconfig, api_client, namespace):
    extra = {
        "monitoring_namespace": namespace,
        "monitoring_prometheus_stack_chart_ref": chart("kube-prometheus-stack"),
        "monitoring_prometheus_stack_chart_repo_url": "",
        "monitoring_loki_chart_ref": chart("loki"),
        "monitoring_loki_chart_repo_url": "",
        "monitoring_alloy_chart_ref": chart("alloy"),
        "monitoring_alloy_chart_repo_url": "",
        "monitoring_image_registry": MIRROR,
        # as with the kserve role in the play
        "monitoring_inference": True,
    }
    first = run_role(tmp_path, kubeconfig, "monitoring", extra)
    assert first.failed == 0, first.messages()

    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    monitors = custom.list_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "servicemonitors"
    )["items"]
    assert {m["metadata"]["name"] for m in monitors} == {
        "volcano-scheduler",
        "volcano-controllers",
        "dcgm-exporter",
    }
    pod_monitors = custom.list_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "podmonitors"
    )["items"]
    assert [m["metadata"]["name"] for m in pod_monitors] == ["kserve-predictors"]
    rule = custom.get_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "prometheusrules", "gpucloud-platform"
    )
    names = {r.get("alert") or r.get("record") for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {
        "GpuAllocatedButIdle",
        "GpuMemoryNearlyFull",
        "GpuTemperatureHigh",
        "QueuePendingJobs",
        "QueueWaitLong",
        "JobFailureRateHigh",
        "SpotReclaimBurst",
        "ClusterGpuWatermarkHigh",
        "InferenceLatencyHigh",
        "InferenceErrorsHigh",
    } <= names
    temp = next(
        r
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if r.get("alert") == "GpuTemperatureHigh"
    )
    assert temp["expr"] == "DCGM_FI_DEV_GPU_TEMP > 85"
    assert "{{ $labels.gpu }}" in temp["annotations"]["summary"]

    core = client.CoreV1Api(api_client)
    for board in ("gpu", "queues", "spot", "inference"):
        cm = core.read_namespaced_config_map(f"gpucloud-dashboard-{board}", namespace)
        assert cm.metadata.labels["grafana_dashboard"] == "1"
        assert json.loads(cm.data[f"{board}.json"])["uid"] == f"gpucloud-{board}"

    kps = standin_values(api_client, namespace, "kube-prometheus-stack")
    assert kps["values"]["global"]["imageRegistry"] == MIRROR
    # kube-state-metrics exports what the rules read, the Queues' reclaim counts among it.
    ksm = kps["values"]["kube-state-metrics"]
    # Billing follows the queue: the pods' queue and job, the namespaces' tenant, the nodes'
    # location, and the Queues and Volcano Jobs as custom resource state.
    assert ksm["metricLabelsAllowlist"] == [
        "pods=[platform.io/tenant,platform.io/billing-type,platform.io/job-class,"
        "volcano.sh/job-name,volcano.sh/queue-name]",
        "namespaces=[platform.io/tenant]",
        "nodes=[platform.io/node-location]",
    ]
    assert ksm["metricAnnotationsAllowList"] == [
        "pods=[platform.io/spot-price,scheduling.volcano.sh/queue-name]"
    ]
    queues, jobs = ksm["customResourceState"]["config"]["spec"]["resources"]
    assert queues["groupVersionKind"]["kind"] == "Queue" and ksm["customResourceState"]["enabled"]
    assert jobs["groupVersionKind"] == {
        "group": "batch.volcano.sh",
        "version": "v1alpha1",
        "kind": "Job",
    }
    for group, resource in (("scheduling.volcano.sh", "queues"), ("batch.volcano.sh", "jobs")):
        assert {
            "apiGroups": [group],
            "resources": [resource],
            "verbs": ["list", "watch"],
        } in ksm["rbac"]["extraRules"]
    # The metering rules are evaluated at the scrape interval, the ledger's resolution.
    (metering,) = [g for g in rule["spec"]["groups"] if g["name"] == "platform-metering"]
    assert metering["interval"] == "30s"
    loki = standin_values(api_client, namespace, "loki")["values"]
    assert loki["deploymentMode"] == "SingleBinary" and "ruler" not in loki
    alloy = standin_values(api_client, namespace, "alloy")["values"]
    assert "loki.source.kubernetes_events" in alloy["alloy"]["configMap"]["content"]
    assert f"loki.{namespace}.svc:3100" in alloy["alloy"]["configMap"]["content"]

    second = run_role(tmp_path, kubeconfig, "monitoring", extra)
    assert second.failed == 0
    assert second.changed == 0


# --- no-chart roles -------------------------------------------------------------


def test_rdma_device_plugin_rolls_out_and_is_idempotent(
    tmp_path, kubeconfig, api_client, namespace
):
    extra = {"rdma_device_plugin_namespace": namespace, "platform_image_registry": MIRROR}
    first = run_role(tmp_path, kubeconfig, "rdma_device_plugin", extra)
    assert first.failed == 0, first.messages()

    from kubernetes import client

    ds = client.AppsV1Api(api_client).read_namespaced_daemon_set("rdma-shared-dp-ds", namespace)
    assert ds.status.desired_number_scheduled > 0
    assert ds.status.number_ready == ds.status.desired_number_scheduled
    assert ds.spec.template.spec.containers[0].image.startswith(
        f"{MIRROR}/mellanox/k8s-rdma-shared-dev-plugin:"
    )
    cm = client.CoreV1Api(api_client).read_namespaced_config_map("rdma-devices", namespace)
    config = json.loads(cm.data["config.json"])
    assert [(c["resourcePrefix"], c["resourceName"]) for c in config["configList"]] == [
        ("rdma", "hca")
    ]

    second = run_role(tmp_path, kubeconfig, "rdma_device_plugin", extra)
    assert second.changed == 0


def test_gpu_node_preflight_reports_the_missing_driver(tmp_path, kubeconfig):
    lenient = run_role(
        tmp_path,
        kubeconfig,
        "gpu_node",
        {
            "gpu_node_preflight_mode": "lenient",
            "gpu_node_label": False,
            "gpu_node_nvidia_smi": "no-such-nvidia-smi",
        },
    )
    assert lenient.failed == 0, lenient.messages()
    report = lenient.fact("gpu_node_report")
    assert report["failed"][:2] == ["driver", "nvidia-smi"]
    assert any(
        "FAIL  driver: NVIDIA driver not found: no-such-nvidia-smi is not installed" in m
        for m in lenient.messages()
    )

    strict = run_role(
        tmp_path,
        kubeconfig,
        "gpu_node",
        {
            "gpu_node_preflight_mode": "strict",
            "gpu_node_label": False,
            "gpu_node_nvidia_smi": "no-such-nvidia-smi",
        },
    )
    assert strict.failed == 1
    assert any(
        "gpu_node preflight failed on localhost (strict mode)" in m for m in strict.messages()
    )


@pytest.mark.parametrize(("driver", "ok"), [("535.104.05", False), ("570.86.15", True)])
def test_gpu_node_preflight_checks_the_driver_version(tmp_path, kubeconfig, driver, ok):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        f'echo "{driver}, NVIDIA H100 80GB HBM3, 00000000:18:00.0"\n'
        f'echo "{driver}, NVIDIA H100 80GB HBM3, 00000000:2A:00.0"\n'
    )
    smi.chmod(0o755)
    runtime = tmp_path / "config.toml"
    runtime.write_text(
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        'BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    )
    run = run_role(
        tmp_path,
        kubeconfig,
        "gpu_node",
        {
            "gpu_node_nvidia_smi": str(smi),
            "gpu_node_runtime_config_paths": [str(runtime)],
            "gpu_node_expected_gpus": 2,
            "gpu_node_label": False,
        },
    )
    report = run.fact("gpu_node_report")
    assert report["driver"] == driver
    assert report["gpus"] == 2
    if ok:
        assert run.failed == 0, run.messages()
        assert report["failed"] == []
    else:
        assert run.failed == 1
        assert report["failed"] == ["driver"]
        assert any(f"driver {driver} is older than 550.54.15" in m for m in run.messages())


def test_gpu_node_labels_and_taints_the_node(tmp_path, kubeconfig, api_client, namespace):
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    node = core.list_node(label_selector="topology.volcano.sh/tor").items[0]
    name = node.metadata.name
    labels = node.metadata.labels
    key = f"gpucloud.test/{namespace}"
    taint = {"key": key, "value": "yes", "effect": "PreferNoSchedule"}
    extra = {
        "gpu_node_preflight": False,
        "gpu_node_name": name,
        "gpu_node_tor": labels["topology.volcano.sh/tor"],
        "gpu_node_spine": labels["topology.volcano.sh/spine"],
        "gpu_node_extra_labels": {key: "labelled"},
        "gpu_node_taints": [taint],
    }
    try:
        first = run_role(tmp_path, kubeconfig, "gpu_node", extra)
        assert first.failed == 0, first.messages()
        live = core.read_node(name)
        assert live.metadata.labels[key] == "labelled"
        assert live.metadata.labels["topology.volcano.sh/tor"] == labels["topology.volcano.sh/tor"]
        assert [t.effect for t in live.spec.taints or [] if t.key == key] == ["PreferNoSchedule"]

        second = run_role(tmp_path, kubeconfig, "gpu_node", extra)
        assert second.changed == 0

        removed = run_role(
            tmp_path,
            kubeconfig,
            "gpu_node",
            {**extra, "gpu_node_taints": [], "gpu_node_taints_absent": [key]},
        )
        assert removed.changed >= 1
        assert not [t for t in core.read_node(name).spec.taints or [] if t.key == key]

        # A label dropped from inventory is removed, though every label still wanted is
        # there already (the role compares the keys its apply owns, not only the values).
        dropped = run_role(
            tmp_path,
            kubeconfig,
            "gpu_node",
            {
                **extra,
                "gpu_node_extra_labels": {},
                "gpu_node_taints": [],
                "gpu_node_taints_absent": [key],
            },
        )
        assert dropped.changed >= 1
        assert key not in core.read_node(name).metadata.labels
        assert (
            run_role(
                tmp_path,
                kubeconfig,
                "gpu_node",
                {**extra, "gpu_node_extra_labels": {}, "gpu_node_taints": []},
            ).changed
            == 0
        )
    finally:
        live = core.read_node(name)
        taints = [t for t in live.spec.taints or [] if t.key != key]
        core.patch_node(
            name, {"metadata": {"labels": {key: None}}, "spec": {"taints": taints or None}}
        )

    missing = run_role(
        tmp_path,
        kubeconfig,
        "gpu_node",
        {**extra, "gpu_node_name": f"{namespace}-absent", "gpu_node_taints": []},
    )
    assert missing.failed == 1
    assert any(
        f"Node {namespace}-absent (host localhost) is not in the cluster" in m
        for m in missing.messages()
    )


# --- policy switches (the whole bring-up is the docs test: docs/bring-up.md) -----


def test_scheduling_policy_refuses_to_remove_the_last_parameterised_binding(
    tmp_path, kubeconfig, api_client
):
    """Every parameterised policy switched off while theirs are the only bindings with a
    ConfigMap parameter: refused before any write (kubernetes/kubernetes#133827)."""
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import NotFoundError

    from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
        ADMISSION_API,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap

    dyn = DynamicClient(api_client)
    bindings = dyn.resources.get(api_version=ADMISSION_API, kind="ValidatingAdmissionPolicyBinding")
    # Every parameterised policy installed, as the role leaves them (they stay afterwards:
    # deleting them is exactly what freezes the informer).
    switches = ap.parameterised_policies()
    assert "workload_queue" in switches  # the one a hand-kept list forgot
    for manifest in ap.admission_manifests(
        pod_placement=False, platform_state=False, compliance_placement=False
    ):
        resource = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        try:
            resource.get(name=manifest["metadata"]["name"])
        except NotFoundError:
            resource.create(body=manifest)
    param_bindings = {b.metadata.name for b in bindings.get().items if b.spec.paramRef}
    parameterised = {ap.POLICY_PREFIX + name.replace("_", "-") for name in switches}
    assert parameterised <= param_bindings
    if param_bindings - parameterised:
        pytest.skip(f"bindings of someone else's with a parameter exist: {sorted(param_bindings)}")

    run = run_role(
        tmp_path,
        kubeconfig,
        "scheduling_policy",
        {
            "scheduling_policy_kubeconfig": str(kubeconfig),
            "scheduling_policy_admission": dict.fromkeys(switches, False),
        },
    )
    assert run.failed == 1 and run.changed == 0
    assert any("kubernetes/kubernetes#133827" in m for m in run.messages()), run.messages()
    after = {b.metadata.name for b in bindings.get().items if b.spec.paramRef}
    assert after == param_bindings


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"scheduling_policy_tiers": "priority,gang"},
            "scheduling_policy_tiers",
        ),
        (
            {
                "scheduling_policy_tiers": [
                    {"plugins": [{"name": "priority"}, {"name": "gang"}]},
                    {
                        "plugins": [
                            {"name": "capacity", "enableHierarchy": True},
                            {"name": "binpack", "arguments": {"binpack.weight": 10**12}},
                        ]
                    },
                ]
            },
            "a weight is an integer from 0 to 100",
        ),
        (
            {"scheduling_policy_admission": {"queue_leaf": "maybe"}},
            "scheduling_policy_admission",
        ),
        (
            {"scheduling_policy_image_registries": ["ghcr.io/", "registry.example.com"]},
            "image_registries[1]: 'registry.example.com' must be a registry host",
        ),
    ],
    ids=[
        "tiers-as-a-string",
        "weight-out-of-bounds",
        "switch-not-a-boolean",
        "prefix-without-slash",
    ],
)
def test_scheduling_policy_refuses_a_variable_of_the_wrong_form_before_writing(
    tmp_path, kubeconfig, extra, message
):
    """Role variables are checked in the form the role uses them: a refusal names the
    variable and the rule, and nothing is applied."""
    run = run_role(
        tmp_path,
        kubeconfig,
        "scheduling_policy",
        {"scheduling_policy_kubeconfig": str(kubeconfig), **extra},
    )
    assert run.failed == 1 and run.changed == 0, run.messages()
    assert any(message in m for m in run.messages()), run.messages()


def test_scheduling_policy_applies_the_image_allow_list_and_removes_it_when_emptied(
    tmp_path, kubeconfig, api_client
):
    """Rule images-from-allowed-registries through the role: a list applies the policy
    naming its prefixes; an empty list (the default) removes it, binding first. The
    PriorityClasses and the scheduler configuration are left alone here; the policy's
    verdicts are tests/integration/test_tenant_security.py's."""
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import NotFoundError

    from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
        ADMISSION_API,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.image_registries import (
        POLICY_IMAGE_REGISTRIES,
    )

    dyn = DynamicClient(api_client)
    policies = dyn.resources.get(api_version=ADMISSION_API, kind="ValidatingAdmissionPolicy")
    bindings = dyn.resources.get(api_version=ADMISSION_API, kind="ValidatingAdmissionPolicyBinding")
    base = {
        "scheduling_policy_kubeconfig": str(kubeconfig),
        "scheduling_policy_priority_classes": False,
        "scheduling_policy_scheduler_conf": False,
    }
    on = run_role(
        tmp_path,
        kubeconfig,
        "scheduling_policy",
        {
            **base,
            "scheduling_policy_image_registries": ["registry.example.com/", "docker.io/library/"],
        },
    )
    assert on.failed == 0 and on.changed >= 1, on.messages()
    applied = policies.get(name=POLICY_IMAGE_REGISTRIES)
    assert "['registry.example.com/', 'docker.io/library/']" in applied.spec.variables[0].expression
    assert bindings.get(name=POLICY_IMAGE_REGISTRIES).spec.policyName == POLICY_IMAGE_REGISTRIES

    off = run_role(tmp_path, kubeconfig, "scheduling_policy", base)
    assert off.failed == 0 and off.changed == 1, off.messages()
    for resource in (bindings, policies):
        with pytest.raises(NotFoundError):
            resource.get(name=POLICY_IMAGE_REGISTRIES)


def test_storage_refuses_a_static_volume_without_its_claim(tmp_path, kubeconfig, api_client):
    """A static volume is always reserved for one claim: without ``claim`` the role stops
    before any write (otherwise any tenant's claim could bind it by volumeName)."""
    from kubernetes import client

    name = f"nc{os.getpid()}-lustre"
    run = run_role(
        tmp_path,
        kubeconfig,
        "storage",
        {
            "storage_nfs_chart_ref": "",
            "storage_cephfs_chart_ref": "",
            "storage_classes": [],
            "storage_static_volumes": [
                {"name": name, "capacity": "1Ti", "host_path": "/lustre/datasets"}
            ],
        },
    )
    assert run.failed == 1 and run.changed == 0, run.messages()
    assert any("claim" in m for m in run.messages()), run.messages()
    names = {pv.metadata.name for pv in client.CoreV1Api(api_client).list_persistent_volume().items}
    assert name not in names
