#!/usr/bin/env bash
# make demo: the operator working on this machine, no cluster needed.
# Starts a local control plane (real kube-apiserver + etcd, built from source
# once), the manager, and the MCP reference server from npm; applies an
# MCPServer; waits for it to be Ready; prints what to look at.
# DEMO_EXIT=1 exits after printing (used by tests and CI); otherwise it runs
# until Ctrl-C, and Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
fail() { printf '\033[31mdemo failed: %s\033[0m\n' "$*" >&2; exit 1; }

work="$(mktemp -d -t mcp-operator-demo.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "${pid}" 2>/dev/null || true; done
  rm -rf "${work}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start a command in its own process group, so cleanup ends all it spawned.
start() { local log="$1"; shift; setsid "$@" >"${log}" 2>&1 & pids+=("$!"); }

say "Building kube-apiserver and etcd from source if not cached (first run: about 15 minutes)"
assets="$(hack/envtest-assets.sh)" || fail "building the control plane; see the messages above"
say "Installing the MCP reference server from npm if not cached"
peers="$(hack/npm-peers.sh)" || fail "installing @modelcontextprotocol/server-everything from npm"
say "Building the manager"
go build -o "${work}/manager" ./cmd/manager || fail "building ./cmd/manager"
go build -o "${work}/controlplane" ./hack/controlplane || fail "building ./hack/controlplane"

kubeconfig="${work}/kubeconfig"
say "Starting the local control plane"
start "${work}/controlplane.log" env KUBEBUILDER_ASSETS="${assets}" "${work}/controlplane" --kubeconfig-out "${kubeconfig}"
for _ in $(seq 1 120); do [[ -s "${kubeconfig}" ]] && break; sleep 0.5; done
[[ -s "${kubeconfig}" ]] || fail "the control plane did not start; log: $(tail -5 "${work}/controlplane.log")"
export KUBECONFIG="${kubeconfig}"

say "Starting the manager"
start "${work}/manager.log" "${work}/manager" --kubeconfig "${kubeconfig}" \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
say "Starting @modelcontextprotocol/server-everything on 127.0.0.1:${port}"
start "${work}/everything.log" env PORT="${port}" node --require "${peers}/loopback.cjs" \
  "${peers}/node_modules/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp

say "Applying an MCPServer that points at it"
kubectl apply -f - <<YAML
apiVersion: mcp.toolmesh.io/v1alpha1
kind: MCPServer
metadata:
  name: everything
  namespace: default
spec:
  url: http://127.0.0.1:${port}/mcp
YAML

say "Waiting for it to be Ready"
kubectl wait --for=condition=Ready mcps/everything --timeout=90s >/dev/null \
  || fail "the MCPServer did not become Ready: $(kubectl get mcps everything -o jsonpath='{.status.conditions}')"

echo
say "kubectl get mcps -o wide"
kubectl get mcps -o wide
echo
say "The tools it discovered (kubectl get mcps everything -o jsonpath=...)"
kubectl get mcps everything -o jsonpath='{range .status.tools[*]}{.name}{"\t"}{.description}{"\n"}{end}' | cut -c1-110
echo
echo "Kubeconfig: ${kubeconfig}   (export KUBECONFIG=${kubeconfig})"
echo "Manager log: ${work}/manager.log"

if [[ "${DEMO_EXIT:-0}" == "1" ]]; then
  exit 0
fi
say "Running. Press Ctrl-C to stop everything."
while sleep 3600; do :; done
