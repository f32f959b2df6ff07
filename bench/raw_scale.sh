#!/usr/bin/env bash
# Raw kops equivalent of kops_instancegroup(min_size=max_size=SIZE, apply=true), as in the kOps guide:
# `kops edit ig` (here with a sed "editor"), then `kops update cluster --yes`. With PREVIEW=1, the guide's
# preview first (`kops update cluster`, the dry run that prints the plan), as the module's default
# (plan_before_apply: true) does; without it the apply is blind, as with plan_before_apply: false.
#   KOPS=/path/to/kops KOPS_STATE_STORE=s3://... [PREVIEW=1] bench/raw_scale.sh CLUSTER IG SIZE
set -euo pipefail
cluster=$1 ig=$2 size=$3
here=$(cd "$(dirname "$0")" && pwd)
KOPS=${KOPS:-kops}
BENCH_SED="s/^(  (minSize|maxSize)): .*/\\1: ${size}/" EDITOR="$here/edit_with_sed.sh" \
  "$KOPS" edit instancegroup "$ig" --name "$cluster"
if [ "${PREVIEW:-0}" = 1 ]; then
  "$KOPS" update cluster --name "$cluster" >/dev/null
fi
"$KOPS" update cluster --name "$cluster" --yes --create-kube-config=false
