#!/usr/bin/env bash
# make demo: the operator working on this machine, no cluster needed.
# Starts a local control plane (real kube-apiserver + etcd, built from source
# once), the manager with its catalog, and the demo MCP server that ships in
# this repository; applies config/samples; waits until everything is Ready;
# prints what to look at and one tool call through the catalog.
# DEMO_EXIT=1 exits after printing (tests and CI); otherwise it runs until
# Ctrl-C, which stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

DEMO_MCP_ADDR="${DEMO_MCP_ADDR:-127.0.0.1:8765}"  # the samples point here
DEMO_BRIDGE_ADDR="${DEMO_BRIDGE_ADDR:-127.0.0.1:8766}"  # and here: a stdio server behind mcp-bridge
CATALOG_ADDR="${CATALOG_ADDR:-127.0.0.1:8090}"
# DEMO_READY_TIMEOUT bounds the wait for the samples to be Ready, all of
# them; a loaded machine (a test run beside others) may need more than a
# person at a terminal does.
DEMO_READY_TIMEOUT="${DEMO_READY_TIMEOUT:-60s}"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
fail() { printf '\033[31mdemo failed: %s\033[0m\n' "$*" >&2; exit 1; }

# ready_ms is DEMO_READY_TIMEOUT in milliseconds, checked before anything
# starts.
# (Six digits at most: more would overflow the arithmetic or kubectl's
# durations.)
[[ "${DEMO_READY_TIMEOUT}" =~ ^([0-9]{1,6})(ms|s|m|h)$ ]] ||
  fail "DEMO_READY_TIMEOUT is a whole number of up to six digits and a unit (ms, s, m or h), such as 60s or 5m; not '${DEMO_READY_TIMEOUT}'"
case "${BASH_REMATCH[2]}" in
  ms) ready_ms=$((10#${BASH_REMATCH[1]})) ;;
  s) ready_ms=$((10#${BASH_REMATCH[1]} * 1000)) ;;
  m) ready_ms=$((10#${BASH_REMATCH[1]} * 60000)) ;;
  h) ready_ms=$((10#${BASH_REMATCH[1]} * 3600000)) ;;
esac

work="$(mktemp -d -t mcp-operator-demo.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM -- "-${pid}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "${pid}" 2>/dev/null || true; done
  rm -rf "${work}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start LOG CMD...: runs CMD in its own process group, so cleanup ends all
# it spawned.
start() { local log="$1"; shift; setsid "$@" >"${log}" 2>&1 & pids+=("$!"); }

# hack/demotool checks ports and prints the catalog's JSON, so the demo
# needs nothing but Go, kubectl and curl. It builds in seconds, before the
# ports are checked, so a port in use is reported before the long build.
go build -o "${work}/demotool" ./hack/demotool || fail "building ./hack/demotool"
port_free() { "${work}/demotool" portfree "$1" 2>/dev/null; }
wait_for_port() { "${work}/demotool" waitport "$1" 2>/dev/null; }

port_free "${DEMO_MCP_ADDR}" || fail "${DEMO_MCP_ADDR} is in use; the samples expect the demo MCP server there"
port_free "${DEMO_BRIDGE_ADDR}" || fail "${DEMO_BRIDGE_ADDR} is in use; the samples expect mcp-bridge there"
port_free "${CATALOG_ADDR}" || fail "${CATALOG_ADDR} is in use; set CATALOG_ADDR=127.0.0.1:PORT"

say "The local control plane: kube-apiserver and etcd, built from source on the first run only (about 10 minutes on 2 cores; progress every 30 s)"
assets="$(hack/envtest-assets.sh)" || fail "building the control plane; see the messages above"
say "Building the manager, mcp-bridge and the demo MCP server"
for cmd in manager mcp-bridge demo-mcp-server; do
  go build -o "${work}/${cmd}" "./cmd/${cmd}" || fail "building ./cmd/${cmd}"
done
go build -o "${work}/controlplane" ./hack/controlplane || fail "building ./hack/controlplane"

kubeconfig="${work}/kubeconfig"
say "Starting the local control plane"
start "${work}/controlplane.log" env KUBEBUILDER_ASSETS="${assets}" "${work}/controlplane" --kubeconfig-out "${kubeconfig}"
for _ in $(seq 1 120); do [[ -s "${kubeconfig}" ]] && break; sleep 0.5; done
[[ -s "${kubeconfig}" ]] || fail "the control plane did not start: $(tail -5 "${work}/controlplane.log")"
export KUBECONFIG="${kubeconfig}"

say "Starting the demo MCP server on ${DEMO_MCP_ADDR}"
start "${work}/demo-mcp-server.log" "${work}/demo-mcp-server" --listen "${DEMO_MCP_ADDR}"
wait_for_port "${DEMO_MCP_ADDR}" || fail "the demo MCP server did not start: $(tail -5 "${work}/demo-mcp-server.log")"

# In a cluster, an MCPServer with spec.workload runs a stdio server in a pod
# behind mcp-bridge; here there is no kubelet, so the bridge runs as a local
# process and config/samples points an MCPServer at it.
say "Starting the demo MCP server over stdio, behind mcp-bridge on ${DEMO_BRIDGE_ADDR}"
start "${work}/mcp-bridge.log" "${work}/mcp-bridge" --listen "${DEMO_BRIDGE_ADDR}" -- "${work}/demo-mcp-server" --stdio
wait_for_port "${DEMO_BRIDGE_ADDR}" || fail "mcp-bridge did not start: $(tail -5 "${work}/mcp-bridge.log")"

say "Starting the manager (controllers and the catalog on ${CATALOG_ADDR})"
start "${work}/manager.log" "${work}/manager" --kubeconfig "${kubeconfig}" \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 --catalog-bind-address "${CATALOG_ADDR}"
wait_for_port "${CATALOG_ADDR}" || fail "the manager did not start: $(tail -5 "${work}/manager.log")"

say "Applying config/samples"
kubectl apply -k config/samples

# not_ready KIND WHAT: fails with what the objects say and the manager's
# last lines, since the manager's log goes with the demo's folder.
not_ready() {
  fail "$2 is not Ready within DEMO_READY_TIMEOUT=${DEMO_READY_TIMEOUT} (or kubectl could not tell):
$(kubectl get "$1" -o wide --request-timeout=10s 2>&1)
The manager's last log lines:
$(tail -40 "${work}/manager.log")"
}
# left is what is left of DEMO_READY_TIMEOUT, to the second, for
# kubectl's --timeout (0 when none is: kubectl then checks once).
waiting_since="${SECONDS}"
left() {
  local ms=$((ready_ms - (SECONDS - waiting_since) * 1000))
  echo "$((ms < 0 ? 0 : ms))ms"
}
say "Waiting for the MCPServers and the ToolCollection to be Ready"
kubectl wait --for=condition=Ready mcps --all --timeout="$(left)" >/dev/null || not_ready mcps "an MCPServer"
kubectl wait --for=condition=Ready tc --all --timeout="$(left)" >/dev/null || not_ready tc "the ToolCollection"
catalog="http://${CATALOG_ADDR}"
# Ready says the collection has a menu, maybe from before the last server's
# tools; its status is the servers' last once its menuHash is the menu the
# catalog serves (both follow the same servers, and converge).
until [[ "$(kubectl get tc assistant -o 'jsonpath={.status.menuHash}')" == \
  "$(curl -fsS "${catalog}/v1/namespaces/default/toolcollections/assistant/tools" | "${work}/demotool" revision)" ]]; do
  [[ "$(left)" != 0ms ]] || not_ready tc "the ToolCollection's status"
  sleep 0.2
done
echo
say "kubectl get mcps,tc"
kubectl get mcps,tc
echo
say "The assistant's menu, as an agent passes it to a model"
echo "\$ curl ${catalog}/v1/namespaces/default/toolcollections/assistant/tools"
curl -fsS "${catalog}/v1/namespaces/default/toolcollections/assistant/tools" |
  "${work}/demotool" menu
echo
say "The tools of the stdio server behind mcp-bridge"
echo "\$ curl ${catalog}/v1/namespaces/default/mcpservers/demo-stdio/tools"
curl -fsS "${catalog}/v1/namespaces/default/mcpservers/demo-stdio/tools" | "${work}/demotool" menu
echo
say "A tool call through the catalog"
call='{"id":"call_1","type":"function","function":{"name":"convert","arguments":"{\"value\": 26.2, \"from\": \"mi\", \"to\": \"km\"}"}}'
echo "\$ curl -X POST ${catalog}/v1/namespaces/default/toolcollections/assistant/execute -d '${call}'"
curl -fsS -X POST "${catalog}/v1/namespaces/default/toolcollections/assistant/execute" -d "${call}" | "${work}/demotool" indent
echo
echo "Kubeconfig:  export KUBECONFIG=${kubeconfig}"
echo "Catalog:     ${catalog}  (GET /v1/tools, ?format=anthropic|mcp; POST /v1/execute)"
echo "Console:     ${catalog}/ui/  (open it in a browser: servers, collections, search, try a tool)"
echo "Logs:        ${work}/manager.log"

if [[ "${DEMO_EXIT:-0}" == "1" ]]; then
  exit 0
fi
say "Running. Press Ctrl-C to stop everything."
while sleep 3600; do :; done
