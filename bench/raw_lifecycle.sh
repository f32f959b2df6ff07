#!/usr/bin/env bash
# The kOps guide's lifecycle as a plain shell script of aws and kops commands: what the playbooks replace.
# Used by bench/run.py (section 3) against the same emulator as the playbooks.
#
#   1. delegation (only with SUBDOMAIN/PARENT): hosted zone, NS record in the parent, dig
#   2. state store: bucket, versioning, AES256 encryption, public access blocked
#   3. kops create cluster; kops update cluster --yes
#   4. scale: kops edit ig SCALE_IG (minSize/maxSize = SCALE_SIZE); kops update cluster --yes
#   5. upgrade: kops edit cluster (kubernetesVersion = K8S_TO); kops update cluster --yes;
#      kops rolling-update cluster --cloudonly --yes (no Kubernetes API behind the emulator)
#   6. kops delete cluster --yes (with SUBDOMAIN: check only NS and SOA remain)
#
# Environment: KOPS (kops binary), AWS_ENDPOINT_URL and AWS credentials, BUCKET, NAME, SSH_KEY (a .pub
# file), IMAGE; optional ZONES, CONTROL_PLANE_ZONES, NODE_COUNT, K8S_FROM, K8S_TO, SCALE_IG, SCALE_SIZE,
# SUBDOMAIN, PARENT, DNS_SERVER (for dig), and the kops offline settings (KOPS_BASE_URL, ...).
# The AWS CLI is the one on PATH (aws-cli v1 on the benchmark machine).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KOPS=${KOPS:-kops}
aws() { command aws --endpoint-url "$AWS_ENDPOINT_URL" --output text "$@"; }

if [ -n "${SUBDOMAIN:-}" ]; then                                             # 1. delegation
  child=$(aws route53 create-hosted-zone --name "$SUBDOMAIN" --caller-reference "bench-$(date +%s%N)" \
          --query 'HostedZone.Id')
  ns=$(aws route53 get-hosted-zone --id "$child" --query 'DelegationSet.NameServers')
  parent=$(aws route53 list-hosted-zones-by-name --dns-name "$PARENT" --max-items 1 --query 'HostedZones[0].Id')
  records=$(for n in $ns; do printf '{"Value":"%s"},' "$n"; done)
  aws route53 change-resource-record-sets --hosted-zone-id "$parent" --change-batch \
    "{\"Changes\":[{\"Action\":\"UPSERT\",\"ResourceRecordSet\":{\"Name\":\"$SUBDOMAIN\",\"Type\":\"NS\",\"TTL\":300,\"ResourceRecords\":[${records%,}]}}]}" >/dev/null
  if [ -n "${DNS_SERVER:-}" ] && command -v dig >/dev/null; then
    dig +short NS "$SUBDOMAIN" @"$DNS_SERVER" >/dev/null
  fi
fi

aws s3api create-bucket --bucket "$BUCKET" >/dev/null                      # 2. state store
aws s3api put-bucket-versioning --bucket "$BUCKET" --versioning-configuration Status=Enabled
aws s3api put-bucket-encryption --bucket "$BUCKET" --server-side-encryption-configuration \
  '{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}'
aws s3api put-public-access-block --bucket "$BUCKET" --public-access-block-configuration \
  BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true
export KOPS_STATE_STORE="s3://$BUCKET"

"$KOPS" create cluster --name "$NAME" --cloud aws --zones "${ZONES:-us-east-1a,us-east-1b,us-east-1c}" \
  --control-plane-zones "${CONTROL_PLANE_ZONES:-us-east-1a}" --node-count "${NODE_COUNT:-2}" \
  --node-size t3.medium --control-plane-size t3.medium --kubernetes-version "${K8S_FROM:-1.34.1}" \
  --image "$IMAGE" --channel none --ssh-public-key "$SSH_KEY" ${SUBDOMAIN:+--dns-zone "$SUBDOMAIN"} >/dev/null
"$KOPS" update cluster --name "$NAME" --yes --create-kube-config=false >/dev/null        # 3. create

BENCH_SED="s/^(  (minSize|maxSize)): .*/\\1: ${SCALE_SIZE:-1}/" EDITOR="$here/edit_with_sed.sh" \
  "$KOPS" edit instancegroup "${SCALE_IG:-nodes-us-east-1c}" --name "$NAME"        # 4. scale
"$KOPS" update cluster --name "$NAME" --yes --create-kube-config=false >/dev/null

BENCH_SED="s/^(  kubernetesVersion): .*/\\1: ${K8S_TO:-1.35.0}/" EDITOR="$here/edit_with_sed.sh" \
  "$KOPS" edit cluster --name "$NAME"                                                # 5. upgrade
"$KOPS" update cluster --name "$NAME" --yes --create-kube-config=false >/dev/null
"$KOPS" rolling-update cluster --name "$NAME" --cloudonly --yes --control-plane-interval 1s \
  --node-interval 1s --bastion-interval 1s >/dev/null 2>&1

"$KOPS" delete cluster --name "$NAME" --yes >/dev/null                              # 6. delete
if [ -n "${SUBDOMAIN:-}" ]; then
  left=$(aws route53 list-resource-record-sets --hosted-zone-id "$child" --query 'ResourceRecordSets[].Type')
  [ "$(echo $left | tr ' ' '\n' | sort | tr '\n' ' ')" = "NS SOA " ] || { echo "records left: $left" >&2; exit 1; }
fi
