#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: route53_subdomain
short_description: Create a Route53 hosted zone for a cluster subdomain and delegate it from its parent zone
version_added: 0.1.0
description:
  - Makes sure a hosted zone exists for a subdomain such as C(kopsclustertest.example.org) and that its
    parent zone holds an NS record pointing at the subdomain's name servers (the delegation kOps needs
    before it can create a cluster with Route53 DNS).
  - Finds the subdomain's zone by name and type (public or private) and never creates a second one.
    When several zones share the name, it fails and asks for O(zone_id) instead of guessing.
  - Without O(parent_zone) or O(parent_zone_id), the parent is the longest public hosted zone whose
    name encloses O(name), the rule kOps uses to find a cluster's zone.
  - Fails, naming the record and before creating anything (check mode too), when the parent zone has a
    CNAME record at O(name), since a name with a CNAME can hold no NS delegation.
  - A zone it creates gets a CallerReference of its own that every retry of the request repeats; when a
    response was lost and Route53 answers the retry with C(HostedZoneAlreadyExists), the zone the first
    attempt created is adopted (one zone, no failure).
  - With O(verify_dns=true), asks the parent zone's name servers for the NS delegation and the
    subdomain's name servers for its SOA through real DNS queries, retrying until O(verify_timeout).
  - With O(state=absent), removes the delegation from the parent and deletes the subdomain's zone
    when it holds only its NS and SOA records.
author:
  - kopsible maintainers (!UNKNOWN)
options:
  name:
    description:
      - The subdomain, e.g. C(kopsclustertest.example.org). Uppercase is folded and a trailing dot dropped.
      - Labels of 1 to 63 characters (a-z, 0-9, inner hyphens), 253 characters in all.
    type: str
    required: true
  state:
    description: Whether the delegated subdomain should exist.
    type: str
    choices: [present, absent]
    default: present
  parent_zone:
    description:
      - Name of the public hosted zone that delegates O(name), e.g. C(example.org).
      - Mutually exclusive with O(parent_zone_id).
    type: str
  parent_zone_id:
    description:
      - Id of the parent hosted zone, for when several public zones share the parent's name.
    type: str
  zone_id:
    description:
      - Id of the subdomain's own hosted zone, for when several zones share its name.
    type: str
  private:
    description:
      - Create a private hosted zone associated with O(vpc_id). A private zone answers inside its VPC
        only, so no NS delegation is written into the parent zone.
    type: bool
    default: false
  vpc_id:
    description: VPC to associate with a private zone. Required with O(private=true).
    type: str
  vpc_region:
    description: Region of O(vpc_id). Defaults to the module's region.
    type: str
  comment:
    description: Comment stored on a zone that this module creates.
    type: str
    default: Delegated subdomain managed by kopsible
  ttl:
    description: TTL in seconds of the NS record written into the parent zone (the kOps guide uses 300).
    type: int
    default: 300
  force:
    description:
      - With O(state=absent), also delete records other than the zone's NS and SOA (for example
        records a deleted cluster left behind). Without it such records make the module fail and list them.
    type: bool
    default: false
  records_deleted_first:
    description:
      - >-
        With O(state=absent) in check mode, the records a task before this one deletes in the same run, which a
        preview has not deleted: the RV(kopsible.kops.kops_cluster#module:deleted_resources) of
        M(kopsible.kops.kops_cluster) with O(kopsible.kops.kops_cluster#module:state=absent), as it is. Its
        C(route53-record) entries (kops' id C(ZONE/TYPE/NAME), pkg/resources/aws/aws.go ListRoute53Records) in this
        zone are not counted as records left in it, so a teardown can be previewed; they are listed in
        RV(deleted_first). Entries of other types are ignored.
      - >-
        A real run ignores this option: by then the earlier task has deleted them, and any that remain fail the
        module (or are deleted with O(force=true)) as other records do.
    type: list
    elements: dict
    default: []
    suboptions:
      type: {description: "kops' resource type; only C(route53-record) is used.", type: str, required: true}
      id: {description: "kops' resource id (C(ZONE/TYPE/NAME) for a C(route53-record)).", type: str, required: true}
      name: {description: "kops' resource name (the record's name).", type: str}
  wait:
    description: Wait until Route53 reports every change INSYNC.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for INSYNC.
    type: int
    default: 300
  verify_dns:
    description:
      - Query the parent zone's name servers for the delegation and the subdomain's name servers for its
        SOA, and fail unless both answer correctly within O(verify_timeout).
    type: bool
    default: false
  verify_timeout:
    description: Seconds to keep retrying the DNS verification (a fresh delegation often fails at first).
    type: int
    default: 60
  nameservers:
    description:
      - Servers to ask for the delegation instead of the parent zone's own name servers
        (for a split-horizon set-up or a local test server), each C(IP) or C(IP:PORT) (C([IPv6]:PORT)).
    type: list
    elements: str
  child_nameservers:
    description:
      - Servers (C(IP) or C(IP:PORT)) to ask for the subdomain's SOA instead of its own name servers.
        Defaults to O(nameservers) when that is given.
    type: list
    elements: str
  port:
    description: UDP/TCP port of the name servers queried by O(verify_dns) when an entry names none.
    type: int
    default: 53
extends_documentation_fragment:
  - kopsible.kops.kops.group
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
notes:
  - Supports check mode (nothing is written to Route53) and diff mode (the delegation record before and after).
  - A second run with the same options reports C(changed=false).
  - Route53 calls are retried with jittered exponential backoff (10 attempts) on throttling, 5xx errors
    and C(PriorRequestNotComplete); connection errors are retried by botocore (C(AWS_MAX_ATTEMPTS),
    C(AWS_RETRY_MODE)).
  - Part of the C(kopsible.kops.kops) action group, so C(module_defaults) for the group apply. It accepts the kops
    modules' shared options (O(state_store), O(kops_binary), O(kops_env)...) and ignores them, so that one
    C(module_defaults) block for C(group/kopsible.kops.kops) can carry them; O(allowed_account_ids) is honoured.
"""

EXAMPLES = r"""
- name: Delegate the cluster subdomain from example.org (the kOps guide's first step)
  kopsible.kops.route53_subdomain:
    name: kopsclustertest.example.org
    parent_zone: example.org
    verify_dns: true

- name: Let the module find the longest enclosing public zone, with a longer TTL
  kopsible.kops.route53_subdomain:
    name: dev.clusters.example.org
    ttl: 3600

- name: A private zone for a private-DNS cluster in an existing VPC
  kopsible.kops.route53_subdomain:
    name: internal.example.org
    private: true
    vpc_id: vpc-0123456789abcdef0
    vpc_region: us-east-1

- name: Remove the subdomain once no cluster uses it
  kopsible.kops.route53_subdomain:
    name: kopsclustertest.example.org
    state: absent

# A teardown that can be previewed with --check: kops deletes the cluster's records before the zone goes
- name: Delete the cluster
  kopsible.kops.kops_cluster:
    name: mycluster01.kopsclustertest.example.org
    state: absent
  register: deleted

- name: Remove the subdomain
  kopsible.kops.route53_subdomain:
    name: kopsclustertest.example.org
    state: absent
    records_deleted_first: "{{ deleted.deleted_resources | default([]) }}"
"""

RETURN = r"""
zone_id:
  description: Id of the subdomain's hosted zone (without the C(/hostedzone/) prefix). Empty in check mode before creation.
  returned: always
  type: str
  sample: Z0123456789ABCDEFGHIJ
name:
  description: The normalised subdomain name.
  returned: always
  type: str
  sample: kopsclustertest.example.org
name_servers:
  description: The subdomain zone's name servers, read from its apex NS record.
  returned: always
  type: list
  elements: str
  sample: [ns-2048.awsdns-64.com, ns-2049.awsdns-65.net]
private:
  description: Whether the subdomain's hosted zone is private (as found, or as created).
  returned: when O(state=present)
  type: bool
parent_zone_id:
  description: Id of the parent hosted zone that holds the delegation.
  returned: when a parent zone was found
  type: str
parent_zone:
  description: Name of the parent hosted zone.
  returned: when a parent zone was found
  type: str
delegation:
  description: The NS record for O(name) in the parent zone after the run (empty when there is none).
  returned: always
  type: dict
  contains:
    name: {description: Record name., type: str}
    type: {description: Always C(NS)., type: str}
    ttl: {description: TTL in seconds., type: int}
    values: {description: "Name servers (sorted, no trailing dot).", type: list, elements: str}
verified:
  description: Result of O(verify_dns); null when verification was not asked for or could not run (check mode with pending changes).
  returned: always
  type: bool
verification:
  description: Details of the DNS verification (answers per server, problems, attempts, seconds).
  returned: when O(verify_dns=true)
  type: dict
change_ids:
  description: Route53 change ids submitted by this run (C(/change/...)); RV(change_ids) is waited for when O(wait=true).
  returned: always
  type: list
  elements: str
changes:
  description:
    - Deprecated, the same as RV(change_ids); removed in 1.0.0. (In the kops modules C(changes) means the spec changes, so
      this module names its Route53 change ids C(change_ids).)
  returned: always
  type: list
  elements: str
deleted_records:
  description: Records removed from the subdomain's zone with O(force=true) on O(state=absent).
  returned: when O(state=absent)
  type: list
  elements: dict
deleted_first:
  description:
    - In check mode, the records of the zone that O(records_deleted_first) says an earlier task deletes (C(name),
      C(type)), not counted as records left in it; empty in a real run.
  returned: when O(state=absent)
  type: list
  elements: dict
  sample: [{name: api.mycluster01.kopsclustertest.example.org, type: A}]
"""

import ipaddress
import re
import uuid

from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, check_account, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._route53 import dns_check
from ansible_collections.kopsible.kops.plugins.module_utils._route53 import zones as route53
from ansible_collections.kopsible.kops.plugins.module_utils._route53.dns_names import DNSNameError, normalize_dns_name

try:
    import botocore
except ImportError:
    pass  # KopsModule (an AnsibleAWSModule) reports missing botocore


_VPC_ID_RE = re.compile(r"vpc-([0-9a-f]{8}|[0-9a-f]{17})")


def argument_spec():
    """The module's options and the action group's shared kops options (kops_common.kops_argument_spec: accepted
    for module_defaults; only ``allowed_account_ids`` is used here)."""
    return dict(
        kops_argument_spec(),
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        parent_zone=dict(type="str"),
        parent_zone_id=dict(type="str"),
        zone_id=dict(type="str"),
        private=dict(type="bool", default=False),
        vpc_id=dict(type="str"),
        vpc_region=dict(type="str"),
        comment=dict(type="str", default="Delegated subdomain managed by kopsible"),
        ttl=dict(type="int", default=300),
        force=dict(type="bool", default=False),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=300),
        verify_dns=dict(type="bool", default=False),
        verify_timeout=dict(type="int", default=60),
        nameservers=dict(type="list", elements="str"),
        child_nameservers=dict(type="list", elements="str"),
        port=dict(type="int", default=53),
        records_deleted_first=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(type=dict(type="str", required=True), id=dict(type="str", required=True), name=dict(type="str")),
        ),
    )


def check_params(module):
    """Validate and normalise names and numbers; fail naming the field. Returns the normalised dict."""
    params = dict(module.params)
    try:
        params["name"] = normalize_dns_name(params["name"], "name")
        if params["parent_zone"]:
            params["parent_zone"] = normalize_dns_name(params["parent_zone"], "parent_zone")
    except DNSNameError as exc:
        module.fail_json(msg=str(exc))
    for field, low, high in (("ttl", 0, 2147483647), ("wait_timeout", 1, 86400), ("verify_timeout", 1, 86400), ("port", 1, 65535)):
        if not low <= params[field] <= high:
            module.fail_json(msg="%s: must be between %d and %d, got %d" % (field, low, high, params[field]))
    for field in ("nameservers", "child_nameservers"):
        for entry in params[field] or []:
            try:
                host, dummy = dns_check.split_server(entry, params["port"])
                ipaddress.ip_address(host)  # the options take addresses: nothing resolves a name server's name here
            except ValueError as exc:
                module.fail_json(msg="%s: %r must be IP, IP:PORT or [IPv6]:PORT (%s)" % (field, entry, exc))
    if params["private"] and not params["vpc_id"] and params["state"] == "present":
        module.fail_json(msg="vpc_id: required when private is true (a private zone belongs to a VPC)")
    # EC2 resource ids: vpc- and 8 or 17 hex digits; CreateHostedZone HostedZoneConfig.Comment: at most 256
    # characters (Route53 API reference). Checked here so that nothing is created from a value AWS rejects.
    if params["vpc_id"] and not _VPC_ID_RE.fullmatch(params["vpc_id"]):
        module.fail_json(msg="vpc_id: %r is not a VPC id such as vpc-0123456789abcdef0" % params["vpc_id"])
    if params["vpc_region"]:
        try:
            kops_rules.aws_region(params["vpc_region"], "vpc_region")
        except kops_rules.RuleError as exc:
            module.fail_json(msg=str(exc))
    if len(params["comment"] or "") > 256:
        module.fail_json(msg="comment: %d characters; Route53 keeps at most 256" % len(params["comment"]))
    if params["parent_zone"] and params["name"] == params["parent_zone"]:
        module.fail_json(msg="name: %s is the parent zone itself, not a subdomain of it" % params["name"])
    params["records_deleted_first"] = kops_records(module, params["records_deleted_first"])
    return params


def kops_records(module, resources):
    """The ``route53-record`` entries of kops' resource list (kops_cluster's deleted_resources) as ``(zone id, type,
    name)`` tuples: kops gives each the id ``ZONE/TYPE/NAME`` (k8s.io/kops v1.36.2 pkg/resources/aws/aws.go
    ListRoute53Records, the zone id without ``/hostedzone/``). Fails naming the entry that is not such a resource."""
    records = []
    for index, resource in enumerate(resources or []):
        field = "records_deleted_first[%d]" % index  # type and id are required by the argument spec
        if resource["type"] != "route53-record":
            continue
        parts = resource["id"].split("/", 2)
        if len(parts) != 3 or not all(parts):
            module.fail_json(msg="%s: a route53-record's id is ZONE/TYPE/NAME (kops' form), got %r" % (field, resource["id"]))
        records.append((parts[0], parts[1], route53.normalize_value(parts[2])))
    return records


def find_parent(module, zones, params):
    """The parent zone summary, or None for a private zone with no parent given."""
    if params["private"] and not (params["parent_zone"] or params["parent_zone_id"]):
        return None
    try:
        return route53.pick_parent_zone(zones, params["name"], params["parent_zone"], params["parent_zone_id"])
    except route53.ZoneLookupError as exc:
        if params["state"] == "absent" and not (params["parent_zone"] or params["parent_zone_id"]):
            return None  # nothing can delegate to a name no zone encloses: nothing to remove
        module.fail_json(msg=str(exc))


def find_child(module, zones, params):
    try:
        return route53.pick_zone(zones, params["name"], params["private"], zone_id=params["zone_id"], field="zone_id")
    except route53.ZoneLookupError as exc:
        module.fail_json(msg=str(exc))


def create_zone(module, client, params):
    """Create the subdomain's zone; returns its summary dict (``change_id`` None when adopted). Only called
    outside check mode.

    One CallerReference per zone this run creates, sent unchanged by every retry (botocore's, after a
    connection closed before the answer came, and AWSRetry's): when the first attempt's response was
    lost, Route53 answers the retry with HostedZoneAlreadyExists and the zone it created is adopted,
    so the run ends with one zone, not two, and not a failure.
    """
    caller_reference = "kopsible-%s" % uuid.uuid4()
    kwargs = dict(
        Name=params["name"] + ".", CallerReference=caller_reference, HostedZoneConfig={"Comment": params["comment"], "PrivateZone": params["private"]}
    )
    if params["private"]:
        kwargs["VPC"] = {"VPCId": params["vpc_id"], "VPCRegion": params["vpc_region"] or module.region}
    try:
        response = client.create_hosted_zone(aws_retry=True, **kwargs)
    except botocore.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "HostedZoneAlreadyExists":
            raise
        summary = route53.zone_by_caller_reference(client, caller_reference)
        if summary is None:
            raise
        summary["change_id"] = None
        return summary
    summary = route53.zone_summary(response["HostedZone"])
    summary["change_id"] = response["ChangeInfo"]["Id"]
    return summary


def child_name_servers(client, zone):
    record = route53.get_record(client, zone["id"], zone["name"], "NS")
    return route53.record_summary(record)["values"] if record else []


def servers(entries, port):
    """``[(ip, port)]`` from option entries (``IP`` or ``IP:PORT``); the caller validated them."""
    return [dns_check.split_server(e, port) for e in entries]


def verify(module, params, name_servers, parent_record):
    """Run the DNS verification; returns (verified bool, details dict)."""
    port = params["port"]
    if params["nameservers"]:
        parent_ips, errors = servers(params["nameservers"], port), []
    else:
        parent_ns = route53.record_summary(parent_record)["values"] if parent_record else []
        ips, errors = dns_check.resolve_addresses(parent_ns)
        parent_ips = [(ip, port) for ip in ips]
    if params["child_nameservers"] or params["nameservers"]:
        child_ips, child_errors = servers(params["child_nameservers"] or params["nameservers"], port), []
    else:
        ips, child_errors = dns_check.resolve_addresses(name_servers)
        child_ips = [(ip, port) for ip in ips]
    result = dns_check.verify_delegation(params["name"], name_servers, parent_ips, child_ips, timeout=params["verify_timeout"])
    result["problems"] = errors + child_errors + result["problems"]
    result["ok"] = result["ok"] and not (errors or child_errors)
    return result["ok"], result


def refuse_cname_at_delegation(module, parent, name, record):
    """Fail, naming the record, when the parent zone holds a CNAME at ``name`` (``record``, raw, or None): DNS allows
    no other record next to a CNAME (RFC 1034 3.6.2) and Route53 refuses the NS delegation (InvalidChangeBatch).
    Checked before anything is created, in check mode too, so that no child zone is left behind undelegated."""
    if record is None:
        return
    cname = route53.record_summary(record)
    module.fail_json(
        msg="The parent zone %s (%s) has a CNAME record %s -> %s: a name with a CNAME can hold no NS delegation, "
        "so %s cannot be delegated; delete or rename that CNAME first (nothing was created)"
        % (parent["name"], parent["id"], name, ", ".join(cname["values"]), name),
        conflicting_record=cname,
        parent_zone_id=parent["id"],
        parent_zone=parent["name"],
        name=name,
        changed=False,
    )


def ensure_present(module, client, params):
    zones = route53.list_zones(client)
    parent = find_parent(module, zones, params)
    child = find_child(module, zones, params)
    result = dict(changed=False, name=params["name"], change_ids=[], verified=None)
    if parent:
        result.update(parent_zone_id=parent["id"], parent_zone=parent["name"])
    change_ids = []
    zone_before = child["id"] if child else ""
    # the parent's records at the subdomain's name, read once: a CNAME there refuses the delegation, the NS is it
    at_name = route53.records_at(client, parent["id"], params["name"], ("CNAME", "NS")) if parent and not params["private"] else {}
    if parent and not params["private"]:
        refuse_cname_at_delegation(module, parent, params["name"], at_name.get("CNAME"))

    if child is None:
        result["changed"] = True
        if module.check_mode:
            child = {"id": "", "name": params["name"], "private": params["private"]}
        else:
            child = create_zone(module, client, params)
            module.wrote("hosted zone %s (%s)" % (params["name"], child["id"]))
            if child["change_id"]:
                change_ids.append(child["change_id"])
    name_servers = child_name_servers(client, child) if child["id"] else []
    result.update(zone_id=child["id"], name_servers=name_servers, private=child["private"])

    before = after = {}
    if parent and not params["private"]:
        before = route53.delegation_state(params["name"], at_name.get("NS"))
        wanted = name_servers or ["(assigned by Route53 when the zone is created)"]
        after = {"name": params["name"], "type": "NS", "ttl": params["ttl"], "values": sorted(wanted)}
        if not route53.delegation_matches(before, wanted, params["ttl"]):
            result["changed"] = True
            if not module.check_mode:
                change = {"Action": "UPSERT", "ResourceRecordSet": route53.ns_rrset(params["name"], name_servers, params["ttl"])}
                change_ids.append(route53.change_records(client, parent["id"], [change], "kopsible delegation of %s" % params["name"]))
                module.wrote("NS record %s in hosted zone %s (%s)" % (params["name"], parent["name"], parent["id"]))
    result["delegation"] = after
    result["diff"] = {"before": {"zone_id": zone_before, "delegation": before}, "after": {"zone_id": child["id"] or "(new zone)", "delegation": after}}
    result["change_ids"] = change_ids
    if params["wait"] and change_ids:
        try:
            route53.wait_insync(client, change_ids, params["wait_timeout"])
        except TimeoutError as exc:
            module.fail_json(msg=str(exc), **result)

    if params["verify_dns"] and not params["private"]:
        if module.check_mode and result["changed"]:
            result["verification"] = {"ok": None, "problems": ["skipped: check mode with pending changes"]}
        else:
            parent_record = route53.get_record(client, parent["id"], parent["name"], "NS")
            result["verified"], result["verification"] = verify(module, params, name_servers, parent_record)
            if not result["verified"]:
                module.fail_json(
                    msg="DNS verification of %s failed after %ss: %s"
                    % (params["name"], result["verification"]["seconds"], "; ".join(result["verification"]["problems"])),
                    **result,
                )
    return result


def ensure_absent(module, client, params):
    zones = route53.list_zones(client)
    parent = find_parent(module, zones, params)
    child = find_child(module, zones, params)
    result = dict(
        changed=False, name=params["name"], zone_id="", name_servers=[], delegation={}, change_ids=[], verified=None, deleted_records=[], deleted_first=[]
    )
    if parent:
        result.update(parent_zone_id=parent["id"], parent_zone=parent["name"])
    record = route53.get_record(client, parent["id"], params["name"], "NS") if parent and not params["private"] else None
    before = {"zone_id": child["id"] if child else "", "delegation": route53.delegation_state(params["name"], record)}

    leftovers, records = [], []
    if child:
        result["zone_id"] = child["id"]
        records = route53.list_records(client, child["id"])
        leftovers = route53.non_apex_records(records, child["name"])
        if module.check_mode and params["records_deleted_first"]:
            # a preview: the earlier task (kops delete cluster) has not deleted what it would delete before this one
            first = {(t, n) for z, t, n in params["records_deleted_first"] if z == child["id"]}
            result["deleted_first"] = [{"name": r["name"], "type": r["type"]} for r in leftovers if (r["type"], r["name"]) in first]
            leftovers = [r for r in leftovers if (r["type"], r["name"]) not in first]
        if leftovers and not params["force"]:
            module.fail_json(
                msg="Hosted zone %s (%s) still holds records other than NS and SOA: %s; delete them "
                "first (e.g. delete the cluster) or set force: true"
                % (params["name"], child["id"], ", ".join("%s %s" % (r["name"], r["type"]) for r in leftovers)),
                records=leftovers,
                **result,
            )
    result["changed"] = bool(record or child)
    result["diff"] = {"before": before, "after": {"zone_id": "", "delegation": {}}}
    if module.check_mode or not result["changed"]:
        result["deleted_records"] = leftovers if result["changed"] else []
        return result

    if record:
        result["change_ids"].append(
            route53.change_records(
                client, parent["id"], [{"Action": "DELETE", "ResourceRecordSet": record}], "kopsible: remove delegation of %s" % params["name"]
            )
        )
        module.wrote("NS record %s deleted from hosted zone %s (%s)" % (params["name"], parent["name"], parent["id"]))
    if child:
        doomed = [r for r in records if not (route53.normalize_value(r["Name"]) == child["name"] and r["Type"] in route53.APEX_TYPES)]
        if doomed:
            result["change_ids"].append(
                route53.change_records(
                    client, child["id"], [{"Action": "DELETE", "ResourceRecordSet": r} for r in doomed], "kopsible: force delete of %s" % params["name"]
                )
            )
            module.wrote("%d records deleted from hosted zone %s (%s)" % (len(doomed), child["name"], child["id"]))
        response = client.delete_hosted_zone(aws_retry=True, Id=child["id"])
        result["change_ids"].append(response["ChangeInfo"]["Id"])
        module.wrote("hosted zone %s (%s) deleted" % (child["name"], child["id"]))
        result["deleted_records"] = leftovers
    if params["wait"]:
        try:
            route53.wait_insync(client, result["change_ids"], params["wait_timeout"])
        except TimeoutError as exc:
            module.fail_json(msg=str(exc), **result)
    return result


def main():
    module = KopsModule(argument_spec=argument_spec(), mutually_exclusive=[("parent_zone", "parent_zone_id")], supports_check_mode=True)
    if module.params["verify_dns"] and not dns_check.HAS_DNSPYTHON:
        module.fail_json(msg="verify_dns: the dnspython library is required on the controller (pip install dnspython)")
    params = check_params(module)
    client = module.client("route53", retry_decorator=route53.retry_decorator())
    with module.aws_failures("allowed_account_ids: STS GetCallerIdentity failed; nothing was changed"):
        check_account(module, params["allowed_account_ids"])  # before anything is read or written, as the kops modules
    with module.aws_failures("Route53 call failed while managing %s" % params["name"]):
        result = (ensure_present if params["state"] == "present" else ensure_absent)(module, client, params)
    result["changes"] = result["change_ids"]  # deprecated name (RETURN): removed in 1.0.0
    module.exit_json(**result)


if __name__ == "__main__":
    main()
