#!/usr/bin/env bash
# Builds the control plane envtest needs (kube-apiserver and etcd) from source
# through the Go module proxy, because prebuilt envtest downloads are not
# reachable from our machines. The binaries are cached outside the repository,
# keyed by version, and reused. Prints the folder to use as KUBEBUILDER_ASSETS.
#
# Progress goes to stderr; stdout carries only the folder, so callers can do
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.6.16}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mcp-operator/envtest"
DEST="${CACHE_ROOT}/${K8S_VERSION}"

log() { echo "envtest-assets: $*" >&2; }

if [[ -x "${DEST}/kube-apiserver" && -x "${DEST}/etcd" ]]; then
  echo "${DEST}"
  exit 0
fi

mkdir -p "${DEST}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

# The staging minor version mirrors the Kubernetes one: v1.37.2 -> v0.37.2.
staging_version="v0.${K8S_VERSION#*.}"

build_kube_apiserver() {
  local mod="${work}/kube-apiserver"
  mkdir -p "${mod}"
  log "building kube-apiserver v${K8S_VERSION} from source (about 9 minutes on 2 cores when cold)"
  # k8s.io/kubernetes replaces its staging modules with ./staging/... paths that
  # do not exist in the module zip; point each at its published release instead.
  local gomod
  gomod="$(cd "${mod}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "module envtest.local/kube-apiserver"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes v${K8S_VERSION}"
    echo
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#replace \1 => \1 '"${staging_version}"'#p' "${gomod}"
  } >"${mod}/go.mod"
  (cd "${mod}" && GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' \
    -o "${DEST}/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "${DEST}/kube-apiserver.tmp" "${DEST}/kube-apiserver"
}

build_etcd() {
  local mod="${work}/etcd"
  mkdir -p "${mod}"
  log "building etcd v${ETCD_VERSION} from source (about 1.5 minutes on 2 cores when cold)"
  printf 'module envtest.local/etcd\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "${ETCD_VERSION}" >"${mod}/go.mod"
  (cd "${mod}" && GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' \
    -o "${DEST}/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "${DEST}/etcd.tmp" "${DEST}/etcd"
}

[[ -x "${DEST}/etcd" ]] || build_etcd
[[ -x "${DEST}/kube-apiserver" ]] || build_kube_apiserver
log "ready in ${DEST}"
echo "${DEST}"
