# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for kops output, one per format (pure functions of text; no I/O).

Formats are those of kops v1.36.2; each parser names the kops file that prints what it reads.
Fixtures captured from the real binary live in tests/unit/fixtures/kops-1.36.2/.
"""

import json
import re

try:
    import yaml
except ImportError:  # reported by every kops module through missing_required_lib (kops_common.state_store_of)
    yaml = None

HAS_YAML = yaml is not None


def parse_table(text):
    """Parse a kops table (util/pkg/tables/format.go: tabwriter, tab-padded, cells may be empty).

    :returns: list of dicts keyed by the upper-case header names, values str (empty cells ``''``).
        Lines after the first blank line that follows the table (e.g. ``Must specify --yes``) are ignored.
    """
    lines = [line.expandtabs(8) for line in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return []
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    rows = []
    for line in lines[1:]:
        if not line.strip():
            break
        row = {}
        for index, name in enumerate(names):
            end = starts[index + 1] if index + 1 < len(starts) else None
            row[name] = line[starts[index] : end].strip() if starts[index] < len(line) else ""
        rows.append(row)
    return rows


def parse_upgrade(stdout):
    """Parse ``kops upgrade cluster`` output (cmd/kops/upgrade_cluster.go: table ITEM PROPERTY OLD NEW;
    ``No upgrade required`` goes to stderr, so no table means nothing to do).

    :returns: list of ``{'item': 'Cluster' or 'InstanceGroup/NAME', 'property': 'KubernetesVersion' |
        'Channel' | 'Image', 'old': str, 'new': str}`` (``old`` is ``''`` when unset).
    """
    rows = [r for r in parse_table(stdout) if "ITEM" in r and "PROPERTY" in r]
    return [{"item": r["ITEM"], "property": r["PROPERTY"], "old": r.get("OLD", ""), "new": r.get("NEW", "")} for r in rows if r["ITEM"]]


def parse_rolling_update(stdout):
    """Parse ``kops rolling-update cluster`` output (pkg/instancegroups/rollingupdate.go table).

    :returns: ``{'groups': [{'name', 'status', 'need_update', 'ready', 'min', 'target', 'max', 'nodes'?}],
        'required': bool}``; counts are int. ``required`` is False after ``No rolling-update required.``
    """
    groups = []
    for row in parse_table(stdout):
        group = {"name": row["NAME"], "status": row["STATUS"]}
        for key, column in (("need_update", "NEEDUPDATE"), ("ready", "READY"), ("min", "MIN"), ("target", "TARGET"), ("max", "MAX"), ("nodes", "NODES")):
            if column in row:
                group[key] = int(row[column]) if row[column].isdigit() else 0
        groups.append(group)
    required = "No rolling-update required." not in stdout and any(g["need_update"] for g in groups)
    return {"groups": groups, "required": required}


def parse_json_objects(text):
    """All JSON values concatenated in ``text`` (list); ``kops validate --wait -o json`` prints one per attempt."""
    decoder = json.JSONDecoder()
    values, index = [], 0
    text = text.strip()
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        value, index = decoder.raw_decode(text, index)
        values.append(value)
    return values


def parse_validate(stdout):
    """Parse ``kops validate cluster -o json`` (cmd/kops/validate_cluster.go), keeping the last attempt.

    :returns: ``{'failures': [...], 'nodes': [...], 'ok': bool, 'attempts': int}``; kops omits empty keys.
        Each failure is kops' ``ValidationError`` (``type``: Node, Pod, Machine, InstanceGroup...; ``name``;
        ``message``) with the whole InstanceGroup object kops attaches replaced by its name,
        ``instance_group`` (pkg/validation/validate_cluster.go).
    :raises ValueError: no JSON object in the output.
    """
    objects = [o for o in parse_json_objects(stdout) if isinstance(o, dict)]
    if not objects:
        raise ValueError("kops validate printed no JSON result")
    last = objects[-1]
    failures = []
    for failure in last.get("failures") or []:
        failure = dict(failure)
        group = failure.pop("instanceGroup", None)
        if isinstance(group, dict) and (group.get("metadata") or {}).get("name"):
            failure["instance_group"] = group["metadata"]["name"]
        failures.append(failure)
    return {"failures": failures, "nodes": last.get("nodes") or [], "ok": not failures, "attempts": len(objects)}


def parse_get_json(stdout):
    """Parse ``kops get ... -o json``: a list always (kops prints one object for one name, else an array)."""
    value = json.loads(stdout)
    return value if isinstance(value, list) else [value]


def parse_yaml_documents(stdout):
    """Parse ``kops get ... -o yaml`` / ``create --dry-run -o yaml``: documents separated by ``---`` (list of dicts)."""
    return [doc for doc in yaml.safe_load_all(stdout) if doc]


def parse_delete_report(stdout):
    """Parse ``kops delete cluster`` output (cmd/kops/delete_cluster.go).

    :returns: ``{'resources': [{'type', 'name', 'id'}], 'deleted': bool, 'nothing_to_delete': bool}``.
        Without ``--yes`` the resources are the ones kops would delete; with ``--yes``, ``deleted``
        is True after ``Deleted cluster: "NAME"``.
    """
    resources = []
    lines = stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("TYPE") and "NAME" in line and "ID" in line:
            for row in parse_table("\n".join(lines[index:])):
                resources.append({"type": row.get("TYPE", ""), "name": row.get("NAME", ""), "id": row.get("ID", "")})
            break
    return {
        "resources": resources,
        "deleted": bool(re.search(r'^Deleted cluster: "', stdout, re.M)),
        "nothing_to_delete": "No cloud resources to delete" in stdout,
    }


# kops failures whose message does not say their cause or what to do, and what to tell the user (kops v1.36.2 source
# cited): (pattern of kops' message, the words added to it).
KNOWN_FAILURES = (
    (
        # a run stopped between CreateInternetGateway and AttachInternetGateway leaves the cluster's gateway unattached;
        # the next run finds it by its tags and refuses to attach it (upup/pkg/fi/cloudup/awstasks/internetgateway.go
        # CheckChanges: CannotChangeField("VPC") though RenderAWS could attach it), retrying until the task deadline
        re.compile(r"executing task InternetGateway/\S+ Example error: Field cannot be changed: VPC"),
        "the cluster's Internet gateway exists but is not attached to its VPC (a kops run stopped between creating and "
        "attaching it), and kops does not attach an existing one (awstasks/internetgateway.go, CheckChanges): attach it "
        "to the cluster's VPC (aws ec2 attach-internet-gateway) or delete it, then run again",
    ),
)


def error_message(stderr):
    """The ``Error: ...`` message kops printed (str), or the last non-log line of stderr, or ''; a failure of
    :data:`KNOWN_FAILURES` gets its explanation appended (``"<kops' message> (<explanation>)"``)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    message = ""
    for line in reversed(lines):
        if line.startswith("Error: "):
            message = line[len("Error: ") :].strip()
            break
    else:
        plain = [line for line in lines if not re.match(r"^[IWE]\d{4} ", line)]
        message = plain[-1].strip() if plain else ""
    for pattern, explanation in KNOWN_FAILURES:
        if pattern.search(message):
            return "%s (%s)" % (message, explanation)
    return message


# kops' banner around a notice it prints to stdout (upup/pkg/fi/cloudup/apply_cluster.go:76 ``starline``: a new kops
# version, a deprecated Kubernetes version, kubelet anonymousAuth, a missing encryptionconfig secret).
_STARLINE = "*" * 81
_KLOG_WARNING = re.compile(r"^W\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+\] (?P<message>.*)$")
_KLOG_ANY = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+\] ")
# Plain stderr lines kops prints that are no warning: results of a command (cmd/kops/upgrade_cluster.go:268,
# get_all.go:96, root.go:329) and the Error: line of a failure (main.go:44, reported as the failure itself).
_NOT_WARNINGS = (
    re.compile(r"^No upgrade required$"),
    re.compile(r"^No instance groups found$"),
    re.compile(r"^Using cluster from kubectl context: "),
    re.compile(r"^Error: "),
)


def kops_warnings(stdout, stderr, merged=False):
    """kops' own warnings in one run's output (list of str, in order, each once).

    Three shapes, all of kops v1.36.2: klog ``W`` lines on stderr (``klog.Warningf``, e.g. cmd/kops/upgrade_cluster.go:207
    "cluster version ... is greater than the desired version ..."), the text between two banner lines of 81 ``*`` on
    stdout (apply_cluster.go, joined into one line), and plain lines on stderr (``fmt.Fprintf(os.Stderr, ...)``, e.g.
    cmd/kops/rolling-update_cluster.go:268 "Unable to reach the kubernetes API.", awstasks/ebsvolume.go:256-260),
    consecutive ones joined, except the result lines of :data:`_NOT_WARNINGS`. With ``merged`` (stdout and stderr in
    one text in both arguments, KopsRunner.run(merged=True)) plain lines are stdout's, so only klog ``W`` lines and
    banners count.
    """
    found = []

    def add(text):
        text = " ".join(text.split())
        if text and text not in found:
            found.append(text)

    banner = None
    for line in (stdout or "").splitlines():
        if line.strip() == _STARLINE:
            if banner is not None:
                add(" ".join(banner))
            banner = [] if banner is None else None
        elif banner is not None:
            banner.append(line.strip())
    plain = []
    for line in (stderr or "").splitlines():
        match = _KLOG_WARNING.match(line)
        if match:
            add(match.group("message"))
        if merged:
            continue
        if match or _KLOG_ANY.match(line) or not line.strip() or any(p.match(line.strip()) for p in _NOT_WARNINGS):
            if plain:
                add(" ".join(plain))
            plain = []
        else:
            plain.append(line.strip())
    if plain:
        add(" ".join(plain))
    return found


def check_placement(nodes, control_plane_zones, zones, node_count=None):
    """The placement of nodes over zones that the kOps guide asks for, checked on validate's ``nodes`` list
    (the result's ``validation.placement``; ``topology`` is kept for kops' meaning, public or private subnets).

    :param nodes: ``[{'name', 'zone', 'role', 'status'}]`` from :func:`parse_validate`.
    :param node_count: the workers asked for (``node_count``), when given: kops spreads them over the zones
        (cmd/kops/create_cluster.go, one node group per zone), so fewer than two workers need no second zone
        (guide 001: one node, three zones).
    :returns: ``{'control_plane_zones': [...], 'node_zones': [...], 'problems': [str]}``: control-plane
        nodes must sit in as many distinct zones as ``control_plane_zones``; workers in at least two
        zones when more than one zone is given and at least two workers are asked for.
    """
    cp_zones = sorted({n.get("zone") for n in nodes if n.get("role") in ("control-plane", "master", "ControlPlane")})
    node_zones = sorted({n.get("zone") for n in nodes if n.get("role") in ("node", "Node")})
    problems = []
    if control_plane_zones and len(cp_zones) < len(set(control_plane_zones)):
        problems.append(
            "control-plane nodes run in %d zone(s) (%s), expected %d (%s)"
            % (len(cp_zones), ", ".join(cp_zones) or "none", len(set(control_plane_zones)), ", ".join(sorted(set(control_plane_zones))))
        )
    spread = len(set(zones or [])) if node_count is None else min(len(set(zones or [])), node_count)
    if spread > 1 and len(node_zones) < 2:
        problems.append(
            "worker nodes run in %d zone(s) (%s); expected at least 2 of %s" % (len(node_zones), ", ".join(node_zones) or "none", ", ".join(sorted(set(zones))))
        )
    return {"control_plane_zones": cp_zones, "node_zones": node_zones, "problems": problems}
