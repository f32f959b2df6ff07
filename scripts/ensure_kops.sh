#!/usr/bin/env bash
# Make sure a kops binary of the pinned version exists; print its path on stdout.
# Order: $KOPS_BINARY if set, `kops` on PATH, .cache/bin/kops, else build it from the Go module
# k8s.io/kops at the pinned tag with this machine's Go toolchain into .cache/bin/kops.
#
# Why not `go install k8s.io/kops/cmd/kops@vX`: the module proxy here refuses the module's version
# list (403), which `go install pkg@version` asks for to check deprecation. `go mod download` of the
# exact version works, so we build inside the downloaded module directory (its go.mod/go.sum pin
# every dependency; v1.36.x has no replace directives).
set -euo pipefail
KOPS_VERSION="${KOPS_VERSION:-1.36.2}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/bin/kops"

version_of() { "$1" version --short 2>/dev/null | tail -n1 | tr -d 'v[:space:]'; }

for candidate in "${KOPS_BINARY:-}" "$(command -v kops 2>/dev/null || true)" "$out"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && [ "$(version_of "$candidate")" = "$KOPS_VERSION" ]; then
    echo "$candidate"; exit 0
  fi
done

command -v go >/dev/null || { echo "ensure_kops: no kops $KOPS_VERSION on PATH and no Go toolchain to build it" >&2; exit 1; }
echo "ensure_kops: building kops v$KOPS_VERSION from the Go module (first build takes minutes)..." >&2
start=$(date +%s)
dir=$(go mod download -json "k8s.io/kops@v$KOPS_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
mkdir -p "$(dirname "$out")"
( cd "$dir" && CGO_ENABLED=0 go build -trimpath -o "$out.tmp" ./cmd/kops )
mv "$out.tmp" "$out"
echo "ensure_kops: built $out in $(( $(date +%s) - start ))s" >&2
[ "$(version_of "$out")" = "$KOPS_VERSION" ] || { echo "ensure_kops: built binary does not report $KOPS_VERSION" >&2; exit 1; }
echo "$out"
