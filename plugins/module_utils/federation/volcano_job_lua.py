# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Lua that Karmada runs for a Volcano Job (rule federation-job-replicas,
``federation/interpreter``), kept as Python strings: a module's AnsiballZ payload carries
only the ``.py`` files of the module_utils it imports (ansible-core 2.19
``executor/module_common.py``, ``CollectionModuleUtilLocator`` reads ``<name>.py`` or
``__init__.py``), so a ``.lua`` file beside this one would never reach the host a module
runs on.

Karmada runs each script in its own sandboxed gopher-lua (Lua 5.1) state
(``pkg/resourceinterpreter/customized/declarative/luavm/lua.go``), so each one defines
the helper it needs; ``kube`` is Karmada's library (``luavm/kube.go``):
``accuratePodRequirements(template)`` is the requirement of one pod of a template
(``helper.GenerateReplicaRequirements``), ``getResourceQuantity(q)`` a quantity as a
number.
"""

from __future__ import annotations

# GetReplicas(desiredObj) -> (replicas, requirement).
# * replicas: every pod of the job, the sum of its tasks' replicas (a task without
#   replicas has none, as Volcano's int32 zero value says).
# * requirement: one pod's. Volcano tasks may differ in shape (a launcher and its
#   workers), while Karmada has one requirement per binding; the largest of each
#   resource over the tasks that have pods is a pod at least as large as every pod of
#   the job, so a member that can hold replicas x requirement can hold the gang, and may
#   be refused while a tighter packing would fit (conservative: never a member too
#   small). The node claim (node selector, affinity, tolerations) is the first such
#   task's (and so are the namespace and priority class, which Karmada fills only with
#   its ResourceQuotaEstimate gate): the platform's job builder gives every task of a
#   job the same placement (jobs/manifest.py, rule placement-pod-spec). A pod that asks
#   for nothing and claims nothing has no requirement (helper.GenerateReplicaRequirements
#   returns nil), and neither then has the job.
GET_REPLICAS = """\
local kube = require("kube")

local function task_replicas(task)
  local n = tonumber(task.replicas)
  if n == nil or n < 0 then
    return 0
  end
  return n
end

function GetReplicas(desiredObj)
  local total = 0
  local requirement = nil
  local largest = {}
  local tasks = {}
  if desiredObj.spec ~= nil and desiredObj.spec.tasks ~= nil then
    tasks = desiredObj.spec.tasks
  end
  for _, task in ipairs(tasks) do
    local replicas = task_replicas(task)
    total = total + replicas
    if replicas > 0 and task.template ~= nil then
      local pod = kube.accuratePodRequirements(task.template)
      if requirement == nil and pod ~= nil then
        requirement = pod
      end
      if pod ~= nil and pod.resourceRequest ~= nil then
        for name, quantity in pairs(pod.resourceRequest) do
          local known = largest[name]
          if known == nil or kube.getResourceQuantity(quantity) > kube.getResourceQuantity(known) then
            largest[name] = quantity
          end
        end
      end
    end
  end
  if requirement == nil then
    return total, nil
  end
  requirement.resourceRequest = largest
  return total, requirement
end
"""

# ReviseReplica(desiredObj, desiredReplica) -> the job for one member. Karmada's binding
# controller calls it for every member whenever the binding has replicas
# (pkg/controllers/binding/common.go ensureWork, needReviseReplicas), Divided or
# Duplicated alike. The platform's placement gives one member all the job's pods (rule
# federation-placement), so the job goes unchanged; any other count would be a gang cut
# in parts that never runs, so the script fails instead and Karmada writes no Work for
# that member (ensureWork records the error and retries).
REVISE_REPLICA = """\
local function total_replicas(obj)
  local total = 0
  if obj.spec == nil or obj.spec.tasks == nil then
    return total
  end
  for _, task in ipairs(obj.spec.tasks) do
    local n = tonumber(task.replicas)
    if n ~= nil and n > 0 then
      total = total + n
    end
  end
  return total
end

function ReviseReplica(desiredObj, desiredReplica)
  local total = total_replicas(desiredObj)
  if desiredReplica ~= total then
    error("a Volcano Job lands whole in one member (gpucloud.platform rule federation-placement): "
      .. tostring(desiredReplica) .. " of its " .. tostring(total) .. " pods assigned here")
  end
  return desiredObj
end
"""
