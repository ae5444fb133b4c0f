# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Volcano 1.15.1's scheduler understands in ``volcano-scheduler.conf``.

Every table below is copied from the Volcano 1.15.1 source (the file is named
next to each table). Volcano parses the configuration with gopkg.in/yaml.v2
without strict mode, so an unknown option key or plugin argument is silently
ignored; an unknown action or a non-boolean option value makes the whole
configuration invalid and the scheduler keeps the previous one. This module
is data only; the rules that use it live in ``scheduler_conf_rules`` and
``scheduler_conf_tier_rules``.
"""

from __future__ import annotations

VOLCANO_VERSION = "1.15.1"

# pkg/scheduler/actions/factory.go (RegisterAction) and each action's Name()
# in pkg/scheduler/actions/<action>/<action>.go
ACTIONS = (
    "enqueue",
    "allocate",
    "preempt",
    "reclaim",
    "backfill",
    "gangpreempt",
    "gangreclaim",
    "shuffle",
)

# Arguments each action reads from the ``configurations`` section.
# pkg/scheduler/conf/constants.go (EnablePredicateErrCacheKey),
# pkg/scheduler/actions/preempt/preempt.go, gangpreempt/gangpreempt.go,
# gangreclaim/gangreclaim.go, allocate/allocate.go, backfill/backfill.go,
# reclaim/reclaim.go
ACTION_ARGUMENTS: dict[str, frozenset[str]] = {
    "enqueue": frozenset(),
    "allocate": frozenset({"predicateErrorCacheEnable"}),
    "backfill": frozenset({"predicateErrorCacheEnable"}),
    "reclaim": frozenset({"predicateErrorCacheEnable"}),
    "preempt": frozenset(
        {
            "predicateErrorCacheEnable",
            "enableTopologyAwarePreemption",
            "topologyAwarePreemptWorkerNum",
            "minCandidateNodesPercentage",
            "minCandidateNodesAbsolute",
            "maxCandidateNodesAbsolute",
        }
    ),
    "gangpreempt": frozenset({"maxDomains", "allowWholeBundle"}),
    "gangreclaim": frozenset({"maxDomains", "allowWholeBundle"}),
    "shuffle": frozenset(),
}

# pkg/scheduler/plugins/factory.go (RegisterPluginBuilder) and each plugin's
# PluginName constant in pkg/scheduler/plugins/<plugin>/
PLUGINS = (
    "drf",
    "gang",
    "deviceshare",
    "predicates",
    "priority",
    "nodeorder",
    "conformance",
    "binpack",
    "resource-strategy-fit",
    "tdm",
    "overcommit",
    "sla",
    "task-topology",
    "numa-aware",
    "cdp",
    "rescheduling",
    "usage",
    "pdb",
    "nodegroup",
    "network-topology-aware",
    "proportion",
    "capacity",
    "extender",
    "resourcequota",
)

# The yaml keys of conf.PluginOption besides ``name`` and ``arguments``,
# pkg/scheduler/conf/scheduler_conf.go. The spelling is Volcano's own: some
# keys are ``enableXxx``, some ``enabledXxx``, and one starts with a capital.
PLUGIN_OPTION_KEYS = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "EnabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)

# Plugins that read ``enableHierarchy``: framework/session.go HierarchyEnabled
# (used by plugins/capacity/capacity.go and plugins/nodegroup/nodegroup.go) and
# plugins/drf/drf.go (hdrf).
HIERARCHY_PLUGINS = frozenset({"capacity", "drf", "nodegroup"})

# Argument kinds: how Volcano reads the value (pkg/scheduler/framework/arguments.go).
# "int" is Arguments.GetInt: only a YAML integer is taken, a quoted "10" is
# ignored with a warning. "float" is GetFloat64 (integer or float). "bool" is
# GetBool (a boolean or a string strconv.ParseBool accepts). "string" is
# GetString or a string type assertion. "any" is a structured value.
INT = "int"
FLOAT = "float"
BOOL = "bool"
STRING = "string"
ANY = "any"

# Each plugin's arguments: the constants read via framework.Arguments in
# pkg/scheduler/plugins/<plugin>/*.go (file named per entry).
PLUGIN_ARGUMENTS: dict[str, dict[str, str]] = {
    # plugins/drf/drf.go, gang/gang.go, priority/priority.go,
    # conformance/conformance.go, proportion/proportion.go, pdb/pdb.go,
    # cdp/cdp.go, resourcequota/resourcequota.go: no arguments are read.
    "drf": {},
    "gang": {},
    "priority": {},
    "conformance": {},
    "proportion": {},
    "pdb": {},
    "cdp": {},
    "resourcequota": {},
    # plugins/binpack/binpack.go; binpack.resources.<name> is a prefix
    "binpack": {
        "binpack.weight": INT,
        "binpack.cpu": INT,
        "binpack.memory": INT,
        "binpack.resources": STRING,
    },
    # plugins/nodeorder/nodeorder.go
    "nodeorder": {
        "nodeaffinity.weight": INT,
        "podaffinity.weight": INT,
        "leastrequested.weight": INT,
        "balancedresource.weight": INT,
        "mostrequested.weight": INT,
        "tainttoleration.weight": INT,
        "imagelocality.weight": INT,
        "podtopologyspread.weight": INT,
    },
    # plugins/predicates/predicates.go (predicate.DynamicResourceAllocationEnable
    # is declared there but never read: DRA follows the DynamicResourceAllocation
    # feature gate, so it is deliberately absent here)
    "predicates": {
        "predicate.NodeAffinityEnable": BOOL,
        "predicate.NodePortsEnable": BOOL,
        "predicate.TaintTolerationEnable": BOOL,
        "predicate.PodAffinityEnable": BOOL,
        "predicate.NodeVolumeLimitsEnable": BOOL,
        "predicate.VolumeZoneEnable": BOOL,
        "predicate.PodTopologySpreadEnable": BOOL,
        "predicate.VolumeBindingEnable": BOOL,
        "predicate.CacheEnable": BOOL,
    },
    # plugins/capacity/capacity.go
    "capacity": {
        "ancestorReclaimLevel": INT,
        "capacity.DynamicResourceAllocationEnable": BOOL,
        "capacity.DRAConsumableCapacityEnable": BOOL,
    },
    # plugins/network-topology-aware/network_topology_aware.go;
    # hypernode.binpack.resources.<name> is a prefix
    "network-topology-aware": {
        "weight": INT,
        "hypernode.binpack.cpu": INT,
        "hypernode.binpack.memory": INT,
        "hypernode.binpack.resources": STRING,
        "hypernode.binpack.normal-pod.enable": BOOL,
        "hypernode.binpack.normal-pod.fading": FLOAT,
        "hypernode.gradient.evict.max-hypernodes": INT,
    },
    # plugins/deviceshare/deviceshare.go, plugins/deviceshare/gpuexclusive.go
    "deviceshare": {
        "deviceshare.GPUSharingEnable": BOOL,
        "deviceshare.NodeLockEnable": BOOL,
        "deviceshare.GPUNumberEnable": BOOL,
        "deviceshare.VGPUEnable": BOOL,
        "deviceshare.AscendMindClusterVNPUEnable": BOOL,
        "deviceshare.AscendHAMiVNPUEnable": BOOL,
        "deviceshare.SchedulePolicy": STRING,
        "deviceshare.ScheduleWeight": INT,
        "deviceshare.KnownGeometriesCMName": STRING,
        "deviceshare.KnownGeometriesCMNamespace": STRING,
        "deviceshare.GPUExclusiveRules": ANY,
    },
    # plugins/overcommit/overcommit.go
    "overcommit": {"overcommit-factor": FLOAT},
    # plugins/numaaware/numaaware.go
    "numa-aware": {"weight": INT},
    # plugins/task-topology/util.go
    "task-topology": {"task-topology.weight": INT},
    # plugins/tdm/tdm.go; tdm.revocable-zone.<zone> is a prefix
    "tdm": {"tdm.evict.period": STRING},
    # plugins/sla/sla.go
    "sla": {"sla-waiting-time": STRING},
    # plugins/usage/usage.go
    "usage": {"usage.weight": INT, "cpu.weight": INT, "memory.weight": INT, "thresholds": ANY},
    # plugins/rescheduling/rescheduling.go
    "rescheduling": {"interval": STRING, "metricsPeriod": STRING, "strategies": ANY},
    # plugins/nodegroup/nodegroup.go
    "nodegroup": {"strict": BOOL, "enablePreferredOrder": BOOL},
    # plugins/resource-strategy-fit/resource_strategy_fit.go
    "resource-strategy-fit": {
        "resourceStrategyFitWeight": INT,
        "resources": ANY,
        "proportional": ANY,
        "sra": ANY,
    },
    # plugins/extender/extender.go
    "extender": {
        "extender.urlPrefix": STRING,
        "extender.httpTimeout": STRING,
        "extender.onSessionOpenVerb": STRING,
        "extender.onSessionCloseVerb": STRING,
        "extender.predicateVerb": STRING,
        "extender.prioritizeVerb": STRING,
        "extender.preemptableVerb": STRING,
        "extender.reclaimableVerb": STRING,
        "extender.queueOverusedVerb": STRING,
        "extender.jobEnqueueableVerb": STRING,
        "extender.jobReadyVerb": STRING,
        "extender.allocateFuncVerb": STRING,
        "extender.deallocateFuncVerb": STRING,
        "extender.ignorable": BOOL,
        "extender.managedResources": ANY,
    },
}

# Argument prefixes: "<prefix><name>" where the plugin reads the names from
# another argument (binpack, network-topology-aware) or takes any suffix (tdm).
# plugins/binpack/binpack.go (BinpackResourcesPrefix),
# plugins/network-topology-aware/network_topology_aware.go
# (HyperNodeBinPackResourcesPrefix), plugins/tdm/tdm.go (revocableZoneLabelPrefix)
ARGUMENT_PREFIXES: dict[str, dict[str, tuple[str, str | None]]] = {
    # prefix -> (kind, the argument listing the resource names or None)
    "binpack": {"binpack.resources.": (INT, "binpack.resources")},
    "network-topology-aware": {
        "hypernode.binpack.resources.": (INT, "hypernode.binpack.resources")
    },
    "tdm": {"tdm.revocable-zone.": (STRING, None)},
}

# Rule weight-bounds: the arguments that are weights, per plugin (each read with
# Arguments.GetInt), and the prefixes whose every argument is a weight. Volcano
# 1.15.1 multiplies a node's score by them and bounds none of them:
# plugins/binpack/binpack.go BinPackingScore (score x MaxNodeScore x binpack.weight;
# binpack.cpu/.memory/.resources.<name> are the per-resource weights, a negative one
# silently becomes 1), plugins/network-topology-aware/network_topology_aware.go
# (MaxNodeScore x weight x score; a negative weight silently becomes 10),
# plugins/nodeorder/nodeorder.go (each kube-scheduler score plugin's 0..100 score x
# its weight; a negative weight inverts the preference), plugins/numaaware,
# plugins/task-topology/util.go, plugins/usage/usage.go,
# plugins/deviceshare/deviceshare.go, plugins/resource-strategy-fit. MaxNodeScore is
# 100 (k8s.io/kube-scheduler/framework), so WEIGHT_MAX keeps every weighted score
# within 100 x 100 and any ratio between two weights expressible; larger or negative
# weights are refused instead of overflowing, inverting or being replaced silently.
WEIGHT_MIN = 0
WEIGHT_MAX = 100
WEIGHT_ARGUMENTS: dict[str, frozenset[str]] = {
    "binpack": frozenset({"binpack.weight", "binpack.cpu", "binpack.memory"}),
    "nodeorder": frozenset(k for k in PLUGIN_ARGUMENTS["nodeorder"] if k.endswith(".weight")),
    "network-topology-aware": frozenset(
        {"weight", "hypernode.binpack.cpu", "hypernode.binpack.memory"}
    ),
    "numa-aware": frozenset({"weight"}),
    "task-topology": frozenset({"task-topology.weight"}),
    "usage": frozenset({"usage.weight", "cpu.weight", "memory.weight"}),
    "deviceshare": frozenset({"deviceshare.ScheduleWeight"}),
    "resource-strategy-fit": frozenset({"resourceStrategyFitWeight"}),
}
WEIGHT_PREFIXES: dict[str, tuple[str, ...]] = {
    "binpack": ("binpack.resources.",),
    "network-topology-aware": ("hypernode.binpack.resources.",),
}

# Victim filters each plugin registers, pkg/scheduler/plugins/<plugin>/*.go
# (ssn.AddPreemptableFn / AddReclaimableFn / AddUnifiedEvictableFn). The
# session walks tiers in order and the first tier whose plugins return a
# non-empty victim set decides (pkg/scheduler/framework/session_plugins.go,
# Preemptable, Reclaimable, UnifiedEvictable).
PREEMPTABLE_PLUGINS = frozenset(
    {"priority", "gang", "conformance", "drf", "tdm", "pdb", "cdp", "extender"}
)
RECLAIMABLE_PLUGINS = frozenset(
    {"gang", "conformance", "drf", "proportion", "capacity", "pdb", "cdp", "extender"}
)
UNIFIED_EVICTABLE_PLUGINS = frozenset({"priority", "gang", "conformance", "capacity"})
# Plugins whose victim filter in the first tier permits candidates, so that
# tier decides victims and later tiers are never asked.
VICTIM_DECIDING_PLUGINS = frozenset({"priority", "gang", "conformance"})

# The chart's ConfigMap: installer/helm/chart/volcano/templates/scheduler.yaml
# names it "{{ .Release.Name }}-scheduler-configmap" with the key
# "volcano-scheduler.conf"; the release is "volcano" in "volcano-system".
SCHEDULER_CONFIGMAP = "volcano-scheduler-configmap"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
