# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Route53 helpers for subdomain delegation: zone lookup, record reads, changes, waits.

Pure functions (``pick_*``, ``normalize_*``, ``delegation_*``) take plain dicts so that unit tests
need no AWS; the others take a boto3 Route53 client made by ``AnsibleAWSModule.client`` with
:func:`retry_decorator` and pass ``aws_retry=True`` on every call.

The parent-zone rule mirrors kOps' FindDNSHostedZone (upup/pkg/fi/cloudup/utils.go): a zone
matches when ``"." + zone`` is a suffix of ``"." + name``, filtered by public/private, and the
longest match wins; several zones of that name is an error rather than a guess.
"""

import time

try:
    from botocore.exceptions import WaiterError
except ImportError:  # pragma: no cover - AnsibleAWSModule reports missing botocore
    WaiterError = None

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.kopsible.kops.plugins.module_utils._route53.dns_names import is_subdomain, parent_name

APEX_TYPES = ("NS", "SOA")
# Route53's answer while an earlier change to the same zone is still being applied (HTTP 400);
# AWS says to retry it like throttling. AWSRetry's own list has Throttling, InternalError,
# ServiceUnavailable and the other generic codes, but not this one.
RETRY_EXTRA_CODES = ("PriorRequestNotComplete",)


def retry_decorator(retries=10):
    """The ``AWSRetry`` decorator for Route53 clients: jittered exponential backoff (random
    0-3 s, then 0-6 s, ... capped at 60 s), ``retries`` attempts in all, on AWSRetry's codes plus
    :data:`RETRY_EXTRA_CODES`. Use as ``module.client('route53', retry_decorator=retry_decorator())``.

    It applies to calls made with ``aws_retry=True`` and only to errors with an AWS error code
    (botocore ``ClientError``); connection errors are retried by botocore itself (its
    ``max_attempts``, 5 in the default ``legacy`` mode; ``AWS_MAX_ATTEMPTS``/``AWS_RETRY_MODE``
    change it).
    """
    return AWSRetry.jittered_backoff(retries=retries, catch_extra_error_codes=list(RETRY_EXTRA_CODES))


class ZoneLookupError(Exception):
    """A hosted zone could not be chosen without guessing; the message says what to do."""


def normalize_value(value):
    """Canonical form of an NS/CNAME-like record value (str): lowercase, no trailing dot."""
    return value.strip().lower().rstrip(".")


def zone_summary(zone):
    """Reduce a ListHostedZones item to ``{'id', 'name', 'private', 'record_count', 'comment'}``.

    ``id`` drops the ``/hostedzone/`` prefix; ``name`` is normalised (no trailing dot).
    """
    config = zone.get("Config") or {}
    return {
        "id": zone["Id"].split("/")[-1],
        "name": normalize_value(zone["Name"]),
        "private": bool(config.get("PrivateZone", False)),
        "record_count": zone.get("ResourceRecordSetCount"),
        "comment": config.get("Comment", ""),
    }


def list_zones(client):
    """All hosted zones of the account as :func:`zone_summary` dicts (list). One call per 100 zones."""
    zones = []
    kwargs = {}
    while True:
        page = client.list_hosted_zones(aws_retry=True, **kwargs)
        zones.extend(zone_summary(z) for z in page.get("HostedZones", []))
        if not page.get("IsTruncated"):
            return zones
        kwargs = {"Marker": page["NextMarker"]}


def zone_by_caller_reference(client, caller_reference):
    """The :func:`zone_summary` of the zone created with ``caller_reference`` (str), or None.

    Route53 answers a CreateHostedZone whose CallerReference was already used with
    HostedZoneAlreadyExists: when that is the retry of a request whose response was lost, this
    finds the zone the first attempt created. ListHostedZones returns each zone's CallerReference.
    """
    kwargs = {}
    while True:
        page = client.list_hosted_zones(aws_retry=True, **kwargs)
        for zone in page.get("HostedZones", []):
            if zone.get("CallerReference") == caller_reference:
                return zone_summary(zone)
        if not page.get("IsTruncated"):
            return None
        kwargs = {"Marker": page["NextMarker"]}


def pick_zone(zones, name, private, zone_id=None, field="name"):
    """Choose the zone called ``name`` of the given type from ``zones``; None when there is none.

    :param zones: list of :func:`zone_summary` dicts.
    :param zone_id: when given, the zone must have this id (and must exist: ZoneLookupError otherwise).
    :raises ZoneLookupError: several zones share the name and type and no ``zone_id`` says which.
    """
    if zone_id:
        zone_id = zone_id.split("/")[-1]
        found = [z for z in zones if z["id"] == zone_id]
        if not found:
            raise ZoneLookupError("%s: no hosted zone has the id %s" % (field, zone_id))
        return found[0]
    found = [z for z in zones if z["name"] == name and z["private"] == private]
    if len(found) > 1:
        raise ZoneLookupError(
            "Found %d %s hosted zones named %s (%s); give the id of the one to use instead of guessing"
            % (len(found), "private" if private else "public", name, ", ".join(sorted(z["id"] for z in found)))
        )
    return found[0] if found else None


def pick_parent_zone(zones, name, parent_zone=None, parent_zone_id=None):
    """Choose the public zone that holds the delegation of ``name`` (normalised str).

    With ``parent_zone_id`` that zone; with ``parent_zone`` (a name) the public zone of that name;
    with neither, the longest public zone that encloses ``name`` (kOps' FindDNSHostedZone rule).

    :returns: a :func:`zone_summary` dict.
    :raises ZoneLookupError: no such zone ("create one first", naming the zone to create), several
        candidates of one name, or a parent that does not enclose ``name``.
    """
    if parent_zone_id:
        parent = pick_zone(zones, None, False, zone_id=parent_zone_id, field="parent_zone_id")
    elif parent_zone:
        parent = pick_zone(zones, parent_zone, False, field="parent_zone")
        if parent is None:
            raise ZoneLookupError("parent_zone: no public hosted zone named %s exists; create one first" % parent_zone)
    else:
        candidates = [z for z in zones if not z["private"] and is_subdomain(name, z["name"])]
        if not candidates:
            raise ZoneLookupError("No public hosted zone encloses %s; create one first (e.g. %s) or give parent_zone" % (name, parent_name(name) or name))
        longest = max(len(z["name"]) for z in candidates)
        best = [z for z in candidates if len(z["name"]) == longest]
        if len(best) > 1:
            raise ZoneLookupError(
                "Found multiple hosted zones matching %s (%s); give parent_zone_id to choose one" % (name, ", ".join(sorted(z["id"] for z in best)))
            )
        parent = best[0]
    if not is_subdomain(name, parent["name"]):
        raise ZoneLookupError("name: %s is not a subdomain of the parent zone %s" % (name, parent["name"]))
    return parent


def record_summary(rrset):
    """Reduce a ResourceRecordSet to ``{'name', 'type', 'ttl', 'values'}`` with normalised, sorted values.

    Alias records get ``values`` of ``['ALIAS <dns name>']``.
    """
    if "AliasTarget" in rrset:
        values = ["ALIAS " + normalize_value(rrset["AliasTarget"]["DNSName"])]
    else:
        values = [r["Value"] for r in rrset.get("ResourceRecords", [])]
        if rrset["Type"] in ("NS", "CNAME"):
            values = [normalize_value(v) for v in values]
    summary = {"name": normalize_value(rrset["Name"].replace("\\052", "*")), "type": rrset["Type"], "ttl": rrset.get("TTL"), "values": sorted(values)}
    if rrset.get("SetIdentifier"):
        summary["set_identifier"] = rrset["SetIdentifier"]
    return summary


def get_record(client, zone_id, name, rtype):
    """Return the raw ResourceRecordSet ``name``/``rtype`` of zone ``zone_id``, or None. One API call."""
    page = client.list_resource_record_sets(aws_retry=True, HostedZoneId=zone_id, StartRecordName=name, StartRecordType=rtype, MaxItems="1")
    for rrset in page.get("ResourceRecordSets", []):
        if normalize_value(rrset["Name"]) == name and rrset["Type"] == rtype:
            return rrset
    return None


def records_at(client, zone_id, name, types):
    """``{type: raw ResourceRecordSet}`` of the ``types`` (iterable of str) zone ``zone_id`` holds at ``name``: one
    ListResourceRecordSets call from ``name`` (Route53 lists a name's records together, sorted by type), and a
    :func:`get_record` for a type that call did not reach (a page filled with the name's other records)."""
    page = client.list_resource_record_sets(aws_retry=True, HostedZoneId=zone_id, StartRecordName=name, MaxItems="100")
    found = dict((r["Type"], r) for r in page.get("ResourceRecordSets", []) if normalize_value(r["Name"]) == name and r["Type"] in types)
    if page.get("IsTruncated") and normalize_value(page.get("NextRecordName", "")) == name:
        for rtype in types:
            if rtype not in found and rtype >= page.get("NextRecordType", ""):
                record = get_record(client, zone_id, name, rtype)
                if record is not None:
                    found[rtype] = record
    return found


def list_records(client, zone_id):
    """All raw ResourceRecordSets of zone ``zone_id`` (list), following pagination."""
    records = []
    kwargs = {"HostedZoneId": zone_id}
    while True:
        page = client.list_resource_record_sets(aws_retry=True, **kwargs)
        records.extend(page.get("ResourceRecordSets", []))
        if not page.get("IsTruncated"):
            return records
        kwargs = {"HostedZoneId": zone_id, "StartRecordName": page["NextRecordName"], "StartRecordType": page["NextRecordType"]}
        if page.get("NextRecordIdentifier"):
            kwargs["StartRecordIdentifier"] = page["NextRecordIdentifier"]


def non_apex_records(records, zone_name):
    """The records of a zone other than its apex NS and SOA, as :func:`record_summary` dicts (list).

    These are what stop Route53 from deleting a zone (HostedZoneNotEmpty).
    """
    rest = []
    for rrset in records:
        if normalize_value(rrset["Name"]) == zone_name and rrset["Type"] in APEX_TYPES:
            continue
        rest.append(record_summary(rrset))
    return rest


def ns_rrset(name, values, ttl):
    """Build an NS ResourceRecordSet for ``name`` with ``values`` (list of host names) and ``ttl`` (seconds)."""
    return {"Name": name + ".", "Type": "NS", "TTL": ttl, "ResourceRecords": [{"Value": v + "."} for v in sorted(values)]}


def change_records(client, zone_id, changes, comment):
    """Submit a change batch; returns the ChangeInfo Id (str). ``changes`` is a list of Change dicts."""
    response = client.change_resource_record_sets(aws_retry=True, HostedZoneId=zone_id, ChangeBatch={"Comment": comment, "Changes": changes})
    return response["ChangeInfo"]["Id"]


def wait_insync(client, change_ids, timeout, delay=2):
    """Wait until every id in ``change_ids`` is INSYNC, with amazon.aws's ``resource_record_sets_changed`` waiter
    (botocore's ``ResourceRecordSetsChanged``: GetChange until ``ChangeInfo.Status`` is INSYNC, throttling retried),
    polling every ``delay`` seconds instead of the waiter's 30.

    :param timeout: seconds (int/float) before giving up, for all the changes together.
    :returns: seconds waited (float).
    :raises TimeoutError: a change is still PENDING after ``timeout``.
    :raises botocore.exceptions.WaiterError: GetChange itself failed (e.g. access denied).
    """
    # imported here: amazon.aws' waiters module loads every service's waiter models (about 0.15 s), which every run of
    # kops_cluster and route53_subdomain paid at start-up though only a Route53 change waits
    from ansible_collections.amazon.aws.plugins.module_utils.waiters import get_waiter

    waiter = get_waiter(client, "resource_record_sets_changed")
    start = time.monotonic()
    for change_id in change_ids:
        left = max(0.0, timeout - (time.monotonic() - start))
        try:
            waiter.wait(Id=change_id, WaiterConfig={"Delay": delay, "MaxAttempts": int(left // delay) + 1})
        except WaiterError as exc:
            if "Max attempts exceeded" not in str(exc):
                raise
            raise TimeoutError("Route53 change %s is not INSYNC after %ss" % (change_id, timeout)) from None
    return time.monotonic() - start


def delegation_state(name, record):
    """The delegation as shown in results and diffs: ``{'name','type','ttl','values'}`` or ``{}`` when absent."""
    if record is None:
        return {}
    summary = record_summary(record)
    summary["name"] = name
    return summary


def delegation_matches(current, name_servers, ttl):
    """True when ``current`` (a :func:`delegation_state` dict) already lists ``name_servers`` with ``ttl``."""
    return bool(current) and current["values"] == sorted(name_servers) and current["ttl"] == ttl
