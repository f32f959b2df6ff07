#!/usr/bin/env python3
"""`make demo`: the kopsible lifecycle on the local AWS emulator, step by step.

Starts the emulator (a moto server on loopback), creates example.org as the parent zone a user
already has, and runs the collection's playbooks against it exactly as against AWS: only the
endpoint and the test credentials in the environment differ. Each step prints what it read back
from the emulator. Everything stops at the end.
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from harness.emulator import Emulator  # noqa: E402
from harness.named import NamedServer, zones_from_route53  # noqa: E402
from harness.playbook import run_playbook  # noqa: E402

PARENT = "example.org"
SUBDOMAIN = "kopsclustertest.example.org"


def step(title):
    print("\n== %s" % title, flush=True)


def run(emu, playbook, extra_vars, label):
    start = time.monotonic()
    result = run_playbook(playbook=os.path.join(ROOT, "playbooks", playbook), emulator=emu, extra_vars=extra_vars)
    elapsed = time.monotonic() - start
    changed = sum(1 for _, r in result.results if r.get("changed"))
    print("   %-40s rc=%d  changed tasks=%d  %.1fs" % (label, result.rc, changed, elapsed), flush=True)
    if result.failed:
        for name, res in result.results:
            if res.get("failed"):
                print("   FAILED %s: %s" % (name, res.get("msg")))
        print(result.stderr[-3000:])
        raise SystemExit("demo: %s failed" % label)
    return result


def show_delegation(emu):
    r53 = emu.client("route53")
    for zone in r53.list_hosted_zones()["HostedZones"]:
        records = r53.list_resource_record_sets(HostedZoneId=zone["Id"])["ResourceRecordSets"]
        print("   zone %-32s %s" % (zone["Name"].rstrip("."), zone["Id"].split("/")[-1]))
        for rr in records:
            if rr["Type"] == "NS":
                values = ", ".join(r["Value"].rstrip(".") for r in rr["ResourceRecords"])
                print("      %-34s NS  ttl=%-6s %s" % (rr["Name"].rstrip("."), rr["TTL"], values))


def main():
    with Emulator() as emu:
        print("emulator: %s (moto server; AWS_ENDPOINT_URL points every AWS client at it)" % emu.url)
        step("0. the parent zone the user already has: %s" % PARENT)
        emu.client("route53").create_hosted_zone(Name=PARENT + ".", CallerReference="demo-parent")

        step("1. delegate %s (playbooks/delegate_subdomain.yml)" % SUBDOMAIN)
        vars_ = {"subdomain": SUBDOMAIN, "parent_zone": PARENT}
        run(emu, "delegate_subdomain.yml", vars_, "delegate")
        run(emu, "delegate_subdomain.yml", vars_, "delegate again (idempotent)")
        show_delegation(emu)

        step("1b. verify the delegation through DNS (bind9 serving the emulator's zones)")
        zones = zones_from_route53(emu.client("route53"))
        parent = NamedServer({PARENT: zones[PARENT]})
        child = NamedServer({SUBDOMAIN: zones[SUBDOMAIN]})
        with parent, child:
            result = run(emu, "delegate_subdomain.yml", dict(vars_, verify_dns=True,
                                                              dns_nameservers=["127.0.0.1:%d" % parent.port],
                                                              dns_child_nameservers=["127.0.0.1:%d" % child.port]),
                         "verify (dig-style NS + SOA queries)")
            delegated = [r for n, r in result.results if n.endswith("from its parent zone")][0]
            print("   verified=%s after %s attempt(s): parent answers %s" % (
                delegated["verified"], delegated["verification"]["attempts"],
                list(delegated["verification"]["parent"].values())[0]))
    print("\ndemo: done (emulator stopped)")


if __name__ == "__main__":
    main()
