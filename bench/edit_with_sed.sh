#!/usr/bin/env bash
# An $EDITOR for `kops edit` in the raw benchmark scripts: applies the sed expression in $BENCH_SED to the
# file kops hands over, the way a person edits minSize/maxSize or kubernetesVersion by hand.
set -euo pipefail
sed -i -E "$BENCH_SED" "$1"
