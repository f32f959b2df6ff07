#!/usr/bin/env bash
# Build the real Kubernetes control plane of the local world into .cache/bin (development tooling, not
# part of the collection): kube-apiserver, kube-controller-manager, kube-scheduler (and kubectl, for the
# kops_binary role's kubectl test) from the Go module
# k8s.io/kubernetes and etcd from go.etcd.io/etcd/server/v3, with this machine's Go toolchain, never a
# downloaded prebuilt binary. Reused when .cache/bin/kube-versions says the pinned versions were built.
#
# k8s.io/kubernetes' go.mod replaces its 31 staging modules (k8s.io/api, k8s.io/apiserver, ...) with
# ./staging/..., which the module zip lacks: a wrapper module of our own requires k8s.io/kubernetes and
# replaces each staging module with its published v0.X.Y (the list is read from upstream's go.mod).
# Version stamping (-X on k8s.io/component-base/version and k8s.io/client-go/pkg/version) makes
# /version report the pinned version instead of v0.0.0-master. Facts and timings:
# shared reference kube-control-plane-notes.md; docs/emulator.md "The Kubernetes half".
set -euo pipefail
KUBE_VERSION="${KUBE_VERSION:-1.35.4}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.cache/bin"
stamp="$bin/kube-versions"
want="kubernetes=v$KUBE_VERSION etcd=v$ETCD_VERSION"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)

have_all() { for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "ensure_kube: reusing $bin ($want)" >&2; exit 0
fi

# Binaries of the pinned versions already on PATH (outside .cache/bin) are reused as kops is (scripts/ensure_kops.sh):
# linked into .cache/bin, where the kube world looks for them. `kube-apiserver --version` prints "Kubernetes vX.Y.Z",
# `etcd --version` "etcd Version: X.Y.Z" first.
search_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$bin" | paste -sd: -)
on_path() { PATH="$search_path" command -v "$1" 2>/dev/null; }
pinned_on_path() {
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    p=$(on_path "$b") || return 1
    [ "$("$p" --version 2>/dev/null | head -n1)" = "Kubernetes v$KUBE_VERSION" ] || return 1
  done
  p=$(on_path kubectl) || return 1
  [ "$("$p" version --client 2>/dev/null | head -n1)" = "Client Version: v$KUBE_VERSION" ] || return 1
  p=$(on_path etcd) || return 1
  [ "$("$p" --version 2>/dev/null | head -n1)" = "etcd Version: $ETCD_VERSION" ] || return 1
}
if pinned_on_path; then
  mkdir -p "$bin"
  for b in "${binaries[@]}"; do ln -sfn "$(on_path "$b")" "$bin/$b"; done
  echo "$want" > "$stamp"
  echo "ensure_kube: reusing $want from PATH (linked into $bin)" >&2; exit 0
fi
command -v go >/dev/null || { echo "ensure_kube: no Go toolchain to build $want" >&2; exit 1; }
mkdir -p "$bin"
work="$root/.cache/kube-build"
mkdir -p "$work/kubernetes" "$work/etcd"
total=$(date +%s)

step() { echo "ensure_kube: $*" >&2; }

# --- Kubernetes -----------------------------------------------------------------------------------
start=$(date +%s)
step "downloading k8s.io/kubernetes v$KUBE_VERSION (module proxy)..."
mod=$(cd "$work/kubernetes" && go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
staging_version="v0.${KUBE_VERSION#1.}"
python3 - "$mod" "$KUBE_VERSION" "$staging_version" > "$work/kubernetes/go.mod" <<'EOF'
import re, sys
upstream, version, staging = sys.argv[1:]
text = open(upstream).read()
go = re.search(r"^go (\S+)$", text, re.M).group(1)
godebug = re.search(r"^godebug (.+)$", text, re.M)
names = re.findall(r"^\s*(k8s\.io/\S+) => \./staging/", text, re.M)
print("module kopsible.local/kubebuild\n\ngo %s\n" % go)
if godebug:
    print("godebug %s\n" % godebug.group(1))
print("require k8s.io/kubernetes v%s\n\nreplace (" % version)
for name in names:
    print("\t%s => %s %s" % (name, name, staging))
print(")")
EOF
cat > "$work/kubernetes/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
( cd "$work/kubernetes" && go mod tidy -e >/dev/null 2>&1 || true )
step "downloaded and resolved in $(( $(date +%s) - start ))s; compiling kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (a cold build takes about 10 minutes on 2 cores)..."
start=$(date +%s)
minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
date_now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.gitCommit=kopsible-build -X $pkg.buildDate=$date_now"
done
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  ( cd "$work/kubernetes" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ldflags" \
      -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd" )
  mv "$bin/$cmd.tmp" "$bin/$cmd"
  step "built $cmd ($(( $(date +%s) - start ))s so far)"
done
step "Kubernetes v$KUBE_VERSION compiled in $(( $(date +%s) - start ))s"

# --- etcd -----------------------------------------------------------------------------------------
start=$(date +%s)
step "building etcd v$ETCD_VERSION from go.etcd.io/etcd/server/v3..."
cat > "$work/etcd/go.mod" <<EOF
module kopsible.local/etcdbuild

go 1.24

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION
EOF
cat > "$work/etcd/tools.go" <<'EOF'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
EOF
( cd "$work/etcd" && go mod tidy -e >/dev/null 2>&1 || true )
( cd "$work/etcd" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3 )
mv "$bin/etcd.tmp" "$bin/etcd"
step "etcd v$ETCD_VERSION built in $(( $(date +%s) - start ))s"

"$bin/kube-apiserver" --version >&2
"$bin/etcd" --version | head -1 >&2
echo "$want" > "$stamp"
step "done in $(( $(date +%s) - total ))s: ${binaries[*]} in $bin"
