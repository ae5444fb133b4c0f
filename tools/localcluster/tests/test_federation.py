"""The local federation as data (federation_spec.py, build_federation.py): ports,
component flags, stop tiers, the objects applied to Karmada and to a member, and the
join Secrets' tokens (no process, no cluster)."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import build_federation  # noqa: E402
import federation_spec as fs  # noqa: E402
import settings  # noqa: E402


def _jwt(claims: dict) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2lnbmF0dXJl"


@pytest.fixture
def comps(tmp_path: Path) -> dict[str, fs.Component]:
    rendered = fs.components(
        tmp_path / "fed", tmp_path / "core", tmp_path / "karmada", fs.ports(900)
    )
    return {c.name: c for c in rendered}


# --- ports --------------------------------------------------------------------------------


def test_ports_shift_by_the_offset_and_stay_apart():
    base, shifted = fs.ports(0), fs.ports(900)
    assert all(shifted[name] == port + 900 for name, port in base.items())
    assert len(set(base.values())) == len(base)
    # below Linux's ephemeral range at the offsets the tests use
    assert max(shifted.values()) < 32768


@pytest.mark.parametrize("cluster_offset", range(0, 1300, 100))
def test_federation_ports_never_meet_a_local_clusters(cluster_offset):
    cluster_ports = {port + cluster_offset for port in settings._BASE_PORTS.values()}
    for offset in (0, 900):
        assert not cluster_ports & set(fs.ports(offset).values())


def test_offset_and_name_come_from_the_environment(monkeypatch):
    monkeypatch.delenv(fs.NAME_ENV, raising=False)
    monkeypatch.delenv(fs.OFFSET_ENV, raising=False)
    assert (fs.name_from_env(), fs.offset_from_env()) == ("fed", 0)
    monkeypatch.setenv(fs.NAME_ENV, "fed-test")
    monkeypatch.setenv(fs.OFFSET_ENV, "900")
    assert (fs.name_from_env(), fs.offset_from_env()) == ("fed-test", 900)


# --- components ---------------------------------------------------------------------------


def test_components_render_in_start_order_and_stop_in_tiers(comps):
    assert list(comps) == fs.ORDER
    stopped = [name for tier in fs.TIERS for name in tier]
    assert sorted(stopped) == sorted(fs.ORDER)
    # controllers first, then the API server, etcd last
    assert fs.TIERS[-1] == ("etcd",) and fs.TIERS[-2] == ("kube-apiserver",)


def test_every_listener_is_on_loopback_with_an_explicit_port(comps):
    """Karmada's defaults listen on all interfaces (:8080, :10357, :10351, :8000, :8443)."""
    listeners = (
        "bind-address",
        "secure-port",
        "listen-client-urls",
        "listen-peer-urls",
        "metrics-bind-address",
        "health-probe-bind-address",
    )
    port_values = {str(p) for p in fs.ports(900).values()}
    for comp in comps.values():
        flags = dict(a[2:].split("=", 1) for a in comp.argv[1:] if a.startswith("--") and "=" in a)
        for flag in listeners:
            if flag in flags:
                assert "127.0.0.1" in flags[flag] or flags[flag] in port_values, (comp.name, flag)
    assert "--metrics-bind-address=127.0.0.1:31980" in comps["karmada-controller-manager"].argv
    assert "--health-probe-bind-address=127.0.0.1:31983" in comps["karmada-scheduler"].argv
    assert "--secure-port=32345" in comps["karmada-webhook"].argv


@pytest.mark.parametrize(
    "name",
    ["kube-controller-manager", "karmada-controller-manager", "karmada-scheduler"],
)
def test_controllers_run_without_leader_election(comps, name):
    assert "--leader-elect=false" in comps[name].argv


def test_the_api_server_has_the_aggregation_layer(comps, tmp_path):
    argv = comps["kube-apiserver"].argv
    pki = tmp_path / "fed" / "pki"
    assert argv[0] == str(tmp_path / "core" / "kube-apiserver")
    for flag in (
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--requestheader-client-ca-file={pki / 'ca.crt'}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--etcd-servers=http://127.0.0.1:32279",
    ):
        assert flag in argv
    assert comps["kube-apiserver"].health == "https://127.0.0.1:32343/readyz"


def test_binaries_come_from_the_two_caches(comps, tmp_path):
    for name, comp in comps.items():
        where = "karmada" if name.startswith("karmada-") else "core"
        assert comp.argv[0] == str(tmp_path / where / (comp.program or "")), name
        assert Path(comp.argv[0]).name == name


def test_karmadas_kube_controller_manager_runs_karmadas_controllers_only(comps):
    argv = comps["kube-controller-manager"].argv
    controllers = next(a for a in argv if a.startswith("--controllers=")).split("=", 1)[1]
    assert {"namespace", "garbagecollector", "serviceaccount-token"} <= set(controllers.split(","))
    assert "nodelifecycle" not in controllers


def test_kubeconfig_and_server_of():
    cfg = fs.kubeconfig("https://127.0.0.1:31443", Path("/s/pki"), "admin")
    assert cfg["users"][0]["user"]["client-certificate"] == "/s/pki/admin.crt"
    assert fs.server_of(yaml.safe_dump(cfg)) == "https://127.0.0.1:31443"


def test_certificates_name_what_kube_apiserver_checks():
    sans = {name: names for name, _, names in fs.SERVING_CERTS}
    assert "karmada-aggregated-apiserver.karmada-system.svc" in sans["aggregated-apiserver"]
    assert "127.0.0.1" in sans["webhook"]
    assert set(fs.USER_CERTS) == set(fs.USERS)
    assert all("system:masters" in orgs for _, orgs in fs.USER_CERTS.values())


# --- objects from Karmada's module ----------------------------------------------------------

WEBHOOKS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-config
webhooks:
  - name: propagationpolicy.karmada.io
    clientConfig:
      url: https://karmada-webhook.karmada-system.svc:443/mutate-propagationpolicy
      caBundle: {{caBundle}}
    failurePolicy: Fail
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-config
webhooks:
  - name: propagationpolicy.karmada.io
    clientConfig:
      url: https://karmada-webhook.karmada-system.svc:443/validate-propagationpolicy
      caBundle: {{caBundle}}
"""


def test_webhook_configuration_points_at_the_loopback_webhook():
    docs = fs.webhook_configuration(WEBHOOKS, 32345, b"CA")
    assert [d["kind"] for d in docs] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    hooks = [h for d in docs for h in d["webhooks"]]
    assert [h["clientConfig"]["url"] for h in hooks] == [
        "https://127.0.0.1:32345/mutate-propagationpolicy",
        "https://127.0.0.1:32345/validate-propagationpolicy",
    ]
    assert all(h["clientConfig"]["caBundle"] == base64.b64encode(b"CA").decode() for h in hooks)
    assert hooks[0]["failurePolicy"] == "Fail"


def test_webhook_configuration_refuses_a_url_it_does_not_know():
    with pytest.raises(ValueError, match="unexpected url"):
        fs.webhook_configuration(WEBHOOKS.replace("karmada-webhook.", "other."), 1, b"CA")


def test_crd_paths_are_the_charts_bases(tmp_path):
    bases = tmp_path / "charts/karmada/_crds/bases"
    for rel in ("policy/b.yaml", "work/a.yaml", "apps/c.yaml"):
        (bases / rel).parent.mkdir(parents=True, exist_ok=True)
        (bases / rel).write_text("kind: CustomResourceDefinition\n")
    (tmp_path / "charts/karmada/_crds/patches").mkdir()
    (tmp_path / "charts/karmada/_crds/patches/webhook.yaml").write_text("x: 1\n")
    paths = fs.crd_paths(tmp_path)
    assert [p.relative_to(bases).as_posix() for p in paths] == [
        "apps/c.yaml",
        "policy/b.yaml",
        "work/a.yaml",
    ]


def test_the_apiservice_leads_to_the_aggregated_apiserver():
    service, apiservice = fs.aggregated_apiserver_objects(32344, b"CA")
    assert service["spec"] == {
        "type": "ExternalName",
        "externalName": "localhost",
        "ports": [{"port": 32344, "protocol": "TCP", "targetPort": 32344}],
    }
    assert apiservice["metadata"]["name"] == "v1alpha1.cluster.karmada.io"
    assert apiservice["spec"]["service"] == {
        "name": "karmada-aggregated-apiserver",
        "namespace": "karmada-system",
        "port": 32344,
    }
    assert base64.b64decode(apiservice["spec"]["caBundle"]) == b"CA"


# --- members --------------------------------------------------------------------------------


def test_parse_member():
    assert fs.parse_member("idc=fed-idc") == fs.Member("idc", "fed-idc")
    assert fs.parse_member("cloud=fed-cloud,region=cn-hangzhou,compliance-zone=z1") == fs.Member(
        "cloud", "fed-cloud", "cn-hangzhou", "z1"
    )
    assert fs.Member("idc", "a", compliance_zone="z").to_json() == {
        "location": "idc",
        "cluster": "a",
        "compliance_zone": "z",
    }


@pytest.mark.parametrize(
    "text",
    [
        "fed-idc",
        "edge=fed-idc",
        "idc=",
        "idc=Fed_IDC",
        "idc=a,zone=z1",
        "idc=a,region=",
        "cloud=a,region=bad value",
    ],
)
def test_parse_member_refuses(text):
    with pytest.raises(ValueError, match="--member"):
        fs.parse_member(text)


def test_a_cluster_is_named_once():
    fs.check_members([fs.Member("idc", "a"), fs.Member("cloud", "b")])
    with pytest.raises(ValueError, match="a named more than once"):
        fs.check_members([fs.Member("idc", "a"), fs.Member("cloud", "a")])


def test_cluster_object_carries_the_location_region_and_zone():
    member = fs.Member("cloud", "fed-cloud", region="cn-hangzhou")
    obj = fs.cluster_object(member, "https://127.0.0.1:27243")
    assert obj["metadata"] == {
        "name": "fed-cloud",
        "labels": {
            "platform.io/node-location": "cloud",
            "topology.kubernetes.io/region": "cn-hangzhou",
            "platform.io/managed-by": "gpucloud-localcluster",
        },
    }
    assert obj["spec"] == {
        "syncMode": "Push",
        "apiEndpoint": "https://127.0.0.1:27243",
        "secretRef": {"namespace": "karmada-cluster", "name": "fed-cloud"},
        "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "fed-cloud-impersonator"},
        "region": "cn-hangzhou",
    }
    idc = fs.cluster_object(fs.Member("idc", "fed-idc", compliance_zone="z1"), "https://x")
    assert idc["metadata"]["labels"]["platform.io/compliance-zone"] == "z1"
    assert "topology.kubernetes.io/region" not in idc["metadata"]["labels"]
    assert "region" not in idc["spec"]


def test_member_objects_are_what_karmadactl_join_makes():
    ns, sa, impersonator, binding = fs.member_objects(fs.Member("idc", "fed-idc"))
    assert (ns["kind"], ns["metadata"]["name"]) == ("Namespace", "karmada-cluster")
    assert (sa["metadata"]["name"], sa["metadata"]["namespace"]) == (
        "karmada-fed-idc",
        "karmada-cluster",
    )
    assert impersonator["metadata"]["name"] == "karmada-impersonator"
    assert binding["roleRef"]["name"] == "cluster-admin"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "karmada-fed-idc", "namespace": "karmada-cluster"}
    ]


def test_join_secrets_hold_the_tokens_and_the_members_ca():
    secret, impersonator = fs.join_secrets("fed-idc", "tok", "imp", b"-----CA-----")
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == (
        "fed-idc",
        "karmada-cluster",
    )
    assert fs.secret_value(secret, "token") == b"tok"
    assert fs.secret_value(secret, "caBundle") == b"-----CA-----"
    assert impersonator["metadata"]["name"] == "fed-idc-impersonator"
    assert fs.secret_value(impersonator, "token") == b"imp"
    assert fs.secret_value(None, "token") is None


def test_a_token_is_reused_only_for_the_same_account_with_time_left():
    now = time.time()
    claims = {"exp": int(now + 30 * 86400), "kubernetes.io": {"serviceaccount": {"uid": "u1"}}}
    token = _jwt(claims)
    assert fs.token_claims(token)["exp"] == claims["exp"]
    assert fs.token_reusable(token, "u1", now)
    # the member was wiped and started again: its ServiceAccount is another
    assert not fs.token_reusable(token, "u2", now)
    # less than a week left
    assert not fs.token_reusable(token, "u1", now + 25 * 86400)
    assert not fs.token_reusable("not-a-jwt", "u1", now)
    assert not fs.token_reusable(_jwt({"kubernetes.io": {}}), "u1", now)


def test_cluster_ready():
    assert fs.cluster_ready({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert not fs.cluster_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not fs.cluster_ready(None)


# --- build --------------------------------------------------------------------------------------


def test_build_compiles_the_four_packages_of_the_generated_module(tmp_path):
    cmd = build_federation.build_command(tmp_path)
    assert cmd[:2] == ["go", "build"]
    assert cmd[cmd.index("-o") + 1] == f"{tmp_path}/"
    packages = [a for a in cmd if a.startswith("github.com/")]
    assert packages == [
        f"github.com/karmada-io/karmada/{pkg}" for pkg in build_federation.BINARIES.values()
    ]
    stamp = cmd[cmd.index("-ldflags") + 1]
    assert "-X github.com/karmada-io/karmada/pkg/version.gitVersion=v1.16.0" in stamp
    assert set(build_federation.BINARIES) == {
        "karmada-controller-manager",
        "karmada-scheduler",
        "karmada-webhook",
        "karmada-aggregated-apiserver",
    }


def test_the_generated_module_requires_the_pin_and_names_the_packages():
    gomod = (build_federation.GOMOD_KARMADA / "go.mod").read_text()
    assert f"require github.com/karmada-io/karmada {build_federation.KARMADA}\n" in gomod
    assert "\nreplace" not in gomod
    tools = (build_federation.GOMOD_KARMADA / "tools.go").read_text()
    for pkg in build_federation.BINARIES.values():
        assert f'_ "github.com/karmada-io/karmada/{pkg}"' in tools
    sums = (build_federation.GOMOD_KARMADA / "go.sum").read_text()
    assert f"github.com/karmada-io/karmada {build_federation.KARMADA} h1:" in sums


def test_build_cache_is_its_own(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(build_federation, "cache_key", lambda: "k")
    assert build_federation.bin_dir() == tmp_path / "gpucloud-localcluster/bin-federation/k"


# --- joining, on a stand-in for the two API servers -------------------------------------------


class _FakeKube:
    """Objects by (kind, namespace, name); TokenRequest counted."""

    def __init__(self):
        self.objects: dict[tuple, dict] = {}
        self.applied = 0
        self.tokens = 0
        self.core = self

    def get(self, _api_version, kind, name, namespace=None):
        return self.objects.get((kind, namespace, name))

    def apply(self, obj):
        self.applied += 1
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        old = self.objects.get(key)
        uid = old["metadata"]["uid"] if old else f"uid-{key[2]}-{self.applied}"
        stored = {**obj, "metadata": {**obj["metadata"], "uid": uid}}
        self.objects[key] = stored
        return stored

    def create_namespaced_service_account_token(self, name, namespace, body, **_):
        from types import SimpleNamespace

        self.tokens += 1
        uid = self.objects[("ServiceAccount", namespace, name)]["metadata"]["uid"]
        exp = int(time.time()) + body["spec"]["expirationSeconds"]
        claims = {"exp": exp, "kubernetes.io": {"serviceaccount": {"uid": uid}}}
        return SimpleNamespace(status=SimpleNamespace(token=_jwt(claims)))


def test_a_second_join_issues_no_token_and_changes_nothing(tmp_path, monkeypatch):
    import federation

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    member_state = tmp_path / "gpucloud-localcluster" / "fed-idc"
    (member_state / "pki").mkdir(parents=True)
    (member_state / "pki" / "ca.crt").write_bytes(b"MEMBER-CA")
    cfg = fs.kubeconfig("https://127.0.0.1:27143", member_state / "pki", "admin")
    (member_state / "admin.kubeconfig").write_text(yaml.safe_dump(cfg))
    member, karmada = _FakeKube(), _FakeKube()
    monkeypatch.setattr(federation, "Kube", lambda *a, **k: member)
    up = federation.Up.__new__(federation.Up)
    up.state, up.kube = tmp_path / "fed", karmada
    m = fs.Member("idc", "fed-idc", compliance_zone="z1")

    assert federation.join(up, m) is True
    assert member.tokens == 2
    cluster = karmada.get(None, "Cluster", "fed-idc")
    assert cluster["spec"]["apiEndpoint"] == "https://127.0.0.1:27143"
    assert cluster["metadata"]["labels"]["platform.io/compliance-zone"] == "z1"
    secret = karmada.get(None, "Secret", "fed-idc", "karmada-cluster")
    assert fs.secret_value(secret, "caBundle") == b"MEMBER-CA"

    assert federation.join(up, m) is False
    assert member.tokens == 2
    assert karmada.get(None, "Secret", "fed-idc", "karmada-cluster") == secret

    # the member was wiped and started again: a new CA, new ServiceAccounts
    (member_state / "pki" / "ca.crt").write_bytes(b"NEW-CA")
    member.objects.clear()
    assert federation.join(up, m) is True
    assert member.tokens == 4
    secret = karmada.get(None, "Secret", "fed-idc", "karmada-cluster")
    assert fs.secret_value(secret, "caBundle") == b"NEW-CA"
