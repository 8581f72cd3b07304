-- Argo CD health check for MCPServer and ToolCollection
-- (mcp.toolmesh.io/v1alpha1). Argo CD has no generic health for custom
-- resources; this reads the kstatus conventions both kinds follow:
-- observedGeneration, Ready, Reconciling and Stalled.
local hs = { status = "Progressing", message = "Waiting for the controller" }
if obj.status == nil then
  return hs
end
if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "Suspended: the last status is kept"
  return hs
end
local generation = obj.metadata.generation or 0
if obj.status.observedGeneration == nil or obj.status.observedGeneration < generation then
  hs.message = "Waiting for the controller to handle generation " .. tostring(generation)
  return hs
end
local ready = nil
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Stalled" and c.status == "True" then
      hs.status = "Degraded"
      hs.message = c.message or c.reason
      return hs
    end
    if c.type == "Reconciling" and c.status == "True" then
      hs.message = c.message or "Reconciling"
      return hs
    end
    if c.type == "Ready" then
      ready = c
    end
  end
end
if ready == nil or ready.status == "Unknown" then
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Degraded"
end
hs.message = ready.message or ready.reason
return hs
