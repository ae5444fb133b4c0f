package v1beta1

// QueueAllocationGateKey is the one identifier volcano.sh/apis v1.15 adds to
// v1.14.0 that Volcano 1.15.1 uses. The Go module registry serves no apis
// release newer than v1.14.0, so the build assembles the module from v1.14.0
// plus this file (see docs/localcluster.md, "volcano.sh/apis").
const QueueAllocationGateKey = GroupName + "/queue-allocation-gate"
