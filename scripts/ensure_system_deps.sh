#!/usr/bin/env bash
# System packages the tests and the demo need from Debian: bind9 (`named`, the local
# authoritative DNS server that answers for the emulator's hosted zones) and dig.
set -euo pipefail
need=()
command -v named >/dev/null 2>&1 || [ -x /usr/sbin/named ] || need+=(bind9)
command -v dig >/dev/null 2>&1 || need+=(bind9-dnsutils)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ensure_system_deps: please install: ${need[*]} (apt-get install ${need[*]})" >&2; exit 1
fi
echo "ensure_system_deps: installing ${need[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
# Debian starts named as a service on install; we run our own instances on loopback only.
(systemctl disable --now named 2>/dev/null || service named stop 2>/dev/null || true) >/dev/null
