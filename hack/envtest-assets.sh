#!/usr/bin/env bash
# Builds the control plane envtest needs (kube-apiserver and etcd) from source
# through the Go module proxy, because prebuilt envtest downloads are not
# reachable from our machines. The binaries are cached outside the repository,
# keyed by version, and reused. Prints the folder to use as KUBEBUILDER_ASSETS.
#
# Progress goes to stderr; stdout carries only the folder, so callers can do
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
# A first build takes minutes (kube-apiserver is large): every
# ENVTEST_PROGRESS_SECONDS (30) it says which step runs, how many packages are
# compiled and about how long is left.
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.6.16}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mcp-operator/envtest"
DEST="${CACHE_ROOT}/${K8S_VERSION}"
PROGRESS_SECONDS="${ENVTEST_PROGRESS_SECONDS:-30}"

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
cores="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"

# Cold-build cost in CPU-seconds, measured on our machines (compiling and
# linking; downloads come on top). Divided by the cores, it is the estimate
# shown before a step has compiled enough packages to measure its own pace.
ETCD_CPU_SECONDS=150
KUBE_APISERVER_CPU_SECONDS=960

steps=()
[[ -x "${DEST}/etcd" ]] || steps+=(etcd)
[[ -x "${DEST}/kube-apiserver" ]] || steps+=(kube-apiserver)

# duration SECONDS: 75 -> 1m15s.
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# estimate STEP: the usual wall-clock seconds of a cold build of STEP here.
estimate() {
  case "$1" in
    etcd) echo $((ETCD_CPU_SECONDS / cores)) ;;
    kube-apiserver) echo $((KUBE_APISERVER_CPU_SECONDS / cores)) ;;
  esac
}

# later_than STEP: the usual seconds of the steps after STEP.
later_than() {
  local after=0 seen=0 s
  for s in "${steps[@]}"; do
    ((seen)) && after=$((after + $(estimate "${s}")))
    [[ "${s}" == "$1" ]] && seen=1
  done
  echo "${after}"
}

# report_while PID DESCRIBE: until PID ends, log every PROGRESS_SECONDS the
# line the function DESCRIBE prints (it sees the caller's locals); returns
# PID's exit status.
report_while() {
  local pid="$1" describe="$2" next=$((SECONDS + PROGRESS_SECONDS))
  while kill -0 "${pid}" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)); then
      next=$((SECONDS + PROGRESS_SECONDS))
      log "$("${describe}")"
    fi
  done
  wait "${pid}"
}

describe_download() {
  echo "step ${number} of ${#steps[@]}: ${step}: downloading its modules, $(duration $((SECONDS - started))) so far"
}

# describe_compile: packages compiled so far (`go build -v` names each one
# it compiles) against those to compile, the pace giving the time left.
describe_compile() {
  local compiled elapsed=$((SECONDS - started)) left
  compiled=$(grep -cv -e '^#' -e '^go: ' "${work}/${step}.log" || true)
  ((compiled > total)) && compiled=${total}
  if ((compiled >= 20 && compiled < total)); then
    left=$(((SECONDS - compile_started) * (total - compiled) / compiled))
  else
    left=$((usual > elapsed ? usual - elapsed : 30))
  fi
  left=$((left + $(later_than "${step}")))
  if ((compiled >= total)); then
    echo "step ${number} of ${#steps[@]}: ${step}: linking, $(duration "${elapsed}") so far; about $(duration "${left}") left in all"
  else
    echo "step ${number} of ${#steps[@]}: ${step}: ${compiled} of ${total} packages compiled, $(duration "${elapsed}") so far; about $(duration "${left}") left in all"
  fi
}

# build STEP NUMBER MODULE_DIR PACKAGE OUTPUT: downloads, then compiles and
# links PACKAGE, reporting progress as it goes.
build() {
  local step="$1" number="$2" mod="$3" pkg="$4" out="$5"
  local started=${SECONDS} usual total compile_started
  usual=$(estimate "${step}")
  log "step ${number} of ${#steps[@]}: ${step} (a cold build takes about $(duration "${usual}") on ${cores} cores, plus downloads)"
  # The packages the build cache does not hold yet, with the build's flags.
  (cd "${mod}" && exec env GOFLAGS=-mod=mod go list -trimpath -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' "${pkg}") \
    >"${work}/${step}.stale" 2>"${work}/${step}.list.log" &
  if ! report_while $! describe_download; then
    tail -n 30 "${work}/${step}.list.log" >&2
    log "downloading the modules of ${step} failed (the lines above are the end of go list's output)"
    return 1
  fi
  total=$(grep -c . "${work}/${step}.stale" || true)
  compile_started=${SECONDS}
  log "step ${number} of ${#steps[@]}: ${step}: compiling ${total} packages, $(duration $((SECONDS - started))) so far"
  (cd "${mod}" && exec env GOFLAGS=-mod=mod go build -v -trimpath -ldflags='-s -w' -o "${out}" "${pkg}") 2>"${work}/${step}.log" &
  if ! report_while $! describe_compile; then
    tail -n 30 "${work}/${step}.log" >&2
    log "building ${step} failed (the lines above are the end of go build's output)"
    return 1
  fi
  log "step ${number} of ${#steps[@]}: ${step} built in $(duration $((SECONDS - started)))"
}


build_kube_apiserver() {
  local mod="${work}/kube-apiserver"
  mkdir -p "${mod}"
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
  build kube-apiserver "$1" "${mod}" k8s.io/kubernetes/cmd/kube-apiserver "${DEST}/kube-apiserver.tmp"
  mv "${DEST}/kube-apiserver.tmp" "${DEST}/kube-apiserver"
}

build_etcd() {
  local mod="${work}/etcd"
  mkdir -p "${mod}"
  printf 'module envtest.local/etcd\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "${ETCD_VERSION}" >"${mod}/go.mod"
  build etcd "$1" "${mod}" go.etcd.io/etcd/server/v3 "${DEST}/etcd.tmp"
  mv "${DEST}/etcd.tmp" "${DEST}/etcd"
}

log "building the control plane from source once (kube-apiserver v${K8S_VERSION}, etcd v${ETCD_VERSION}) into ${DEST}"
number=0
for step in "${steps[@]}"; do
  number=$((number + 1))
  case "${step}" in
    etcd) build_etcd "${number}" ;;
    kube-apiserver) build_kube_apiserver "${number}" ;;
  esac
done
log "ready in ${DEST}"
echo "${DEST}"
