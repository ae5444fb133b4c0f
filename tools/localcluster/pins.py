"""Pinned upstream versions of the local cluster, in one place."""

KUBERNETES = "v1.35.3"
# k8s.io staging modules are published as v0.<minor>.<patch> of the same release.
KUBERNETES_STAGING = "v0." + KUBERNETES.split(".", 1)[1]
VOLCANO = "v1.15.1"
# The newest volcano.sh/apis the Go module registry serves; see docs/localcluster.md.
VOLCANO_APIS_BASE = "v1.14.0"
ETCD = "v3.6.5"
KWOK = "v0.7.0"
HELM = "v3.21.4"
# Prometheus's Go module v0.<major*100+minor>.<patch> is release 3.8.0.
PROMETHEUS = "v0.308.0"
PROMETHEUS_RELEASE = "3.8.0"
KUBE_STATE_METRICS = "v2.18.0"

# Built from the generated module in gomod/: output name -> main package.
MODULE_BINARIES = {
    "etcd": "./cmd/etcd",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "vc-scheduler": "volcano.sh/volcano/cmd/scheduler",
    "vc-controller-manager": "volcano.sh/volcano/cmd/controller-manager",
    "vc-webhook-manager": "volcano.sh/volcano/cmd/webhook-manager",
}
# Installed with `go install module/cmd@version` (their modules have no replaces).
INSTALLED_BINARIES = {
    "kwok": f"sigs.k8s.io/kwok/cmd/kwok@{KWOK}",
    "helm": f"helm.sh/helm/v3/cmd/helm@{HELM}",
}
# Built from the generated module in gomod-metrics/ (Prometheus's go.mod has
# exclude directives, which `go install module@version` refuses):
# output name -> (main package, version stamped into it).
METRICS_BINARIES = {
    "prometheus": ("github.com/prometheus/prometheus/cmd/prometheus", PROMETHEUS_RELEASE),
    "promtool": ("github.com/prometheus/prometheus/cmd/promtool", PROMETHEUS_RELEASE),
    "kube-state-metrics": ("k8s.io/kube-state-metrics/v2", KUBE_STATE_METRICS.lstrip("v")),
}
# KServe's controller, built from the generated module in gomod-kserve/ on the
# client libraries KServe's own go.mod pins (see docs/localcluster.md):
# output name -> main package.
KSERVE = "v0.20.0"
KSERVE_BINARIES = {
    "kserve-manager": "github.com/kserve/kserve/cmd/manager",
}
