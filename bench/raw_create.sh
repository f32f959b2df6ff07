#!/usr/bin/env bash
# Raw kops equivalent of kops_cluster(state=present, apply=true) on a new gossip cluster:
# `kops create cluster ...` then `kops update cluster --yes` (kOps guide, steps 3 and 4).
#   KOPS=/path/to/kops KOPS_STATE_STORE=s3://... SSH_KEY=/path/id.pub IMAGE=ami-... bench/raw_create.sh NAME
set -euo pipefail
name=$1
KOPS=${KOPS:-kops}
"$KOPS" create cluster --name "$name" --cloud aws --zones "${ZONES:-us-east-1a,us-east-1b}" \
  --control-plane-zones "${CONTROL_PLANE_ZONES:-us-east-1a}" --node-count "${NODE_COUNT:-2}" \
  --node-size t3.medium --control-plane-size t3.medium --kubernetes-version "${K8S_VERSION:-1.34.1}" \
  --image "$IMAGE" --channel none --ssh-public-key "$SSH_KEY" >/dev/null
"$KOPS" update cluster --name "$name" --yes --create-kube-config=false >/dev/null
