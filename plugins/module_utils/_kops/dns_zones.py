# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where kops puts a cluster's DNS records: whether a hosted zone encloses a name, and a closer zone than the
cluster's dnsZone that would take its records (kops picks the longest matching zone, dns-controller writes there)."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.module_utils._route53.dns_names import DNSNameError, is_subdomain, normalize_dns_name


def dns_zone_encloses(zone, name):
    """``dns_zone`` must be the cluster's own name or enclose it (upup/pkg/fi/cloudup/utils.go FindDNSHostedZone)."""
    try:
        zone = normalize_dns_name(zone, "dns_zone")
    except DNSNameError as exc:
        raise RuleError(str(exc)) from exc
    if zone != name and not is_subdomain(name, zone):
        raise RuleError(
            "dns_zone: %s does not enclose the cluster name %s; the cluster's DNS records are "
            "written under its name, so the zone must be a suffix of it" % (zone, name)
        )
    return zone


def closer_zones(name, dns_zone, zones, private):
    """Hosted zones of the cluster's kind (public or private) that enclose cluster ``name`` and are enclosed by
    ``dns_zone``, longest (closest) first: list of zone summaries (route53.zone_summary dicts).

    kops itself picks the longest enclosing zone when no zone is named (upup/pkg/fi/cloudup/utils.go
    FindDNSHostedZone: suffix match, filtered by public/private, longest wins); a named ``dns_zone`` farther up is
    used as given. Records written there under a delegated closer zone are never answered: resolvers follow the
    delegation (a zone cut, RFC 1034 section 4.2.1) and ask the closer zone, which does not hold them."""
    found = []
    for zone in zones:
        if zone["private"] != private or zone["name"] == dns_zone:
            continue
        if (name == zone["name"] or is_subdomain(name, zone["name"])) and is_subdomain(zone["name"], dns_zone):
            found.append(zone)
    return sorted(found, key=lambda z: -len(z["name"]))


def closer_zone_problem(name, dns_zone, zone, delegated_from=None):
    """The message refusing ``dns_zone`` because ``zone`` (a zone summary) is closer to cluster ``name``;
    ``delegated_from`` is the zone holding its NS delegation (public zones)."""
    kind = "private" if zone["private"] else "public"
    how = " and is delegated from %s" % delegated_from if delegated_from else ""
    return (
        "dns_zone: %s is not the closest hosted zone enclosing %s: the %s zone %s (%s) exists%s, so records kops "
        "wrote in %s would be shadowed by it and the API name would never resolve. Use dns_zone: %s"
        % (dns_zone, name, kind, zone["name"], zone["id"], how, dns_zone, zone["name"])
    )
