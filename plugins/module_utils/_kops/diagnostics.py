# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A diagnostics bundle of one kOps cluster, as kops users are asked for in bug reports: the cloud resources of
``kops toolbox dump`` (cmd/kops/toolbox_dump.go without ``--dir``: no SSH to any node), the cluster spec and
InstanceGroups of the state store, and the Kubernetes objects of the cluster's API, secrets redacted.

kops dumps Kubernetes objects only with ``--dir``, which also reads a private SSH key and connects to every node
(``dump.NewLogDumper``); :func:`kubernetes_objects` reads the same objects as kops' resource dumper
(pkg/dump/resourcedumper.go: every resource the API lists, the server's preferred version of each group, less
``ignoredResources``) through the kubernetes client, without SSH. Unlike kops, which writes Secrets as they are,
:func:`redact` replaces every Secret value, and every PEM private key wherever it appears, by a placeholder.
"""

import re

# pkg/dump/resourcedumper.go ignoredResources: not dumped by kops either
IGNORED_RESOURCES = frozenset(("componentstatuses", "podtemplates", "replicationcontrollers", "controllerrevisions"))
REDACTED = "<redacted: %d bytes>"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# RFC 7468 labels: "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY"
_PEM_PRIVATE_KEY = re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END \1-----|\Z)", re.S)


def redact(value, path="", found=None, secrets=()):
    """``value`` (a JSON-shaped structure: dicts, lists, scalars) with secrets replaced by ``<redacted: N bytes>``.

    Replaced: the ``data`` and ``stringData`` values of every Secret object (``kind: Secret``) and its
    ``kubectl.kubernetes.io/last-applied-configuration`` annotation (which repeats them); every PEM private key
    block in any string; every occurrence of a string of ``secrets`` (e.g. the AWS secret key of the run; strings of
    fewer than 4 characters are not searched for).

    :param path: where ``value`` sits, for the report (``kubernetes.v1/secrets[3].data.tls.key``).
    :param found: a list that gets the path of every replaced value appended (None: not reported).
    :returns: a new structure; ``value`` is not changed.
    """
    found = [] if found is None else found
    secrets = [s for s in secrets if s and len(s) >= 4]
    if isinstance(value, dict):
        is_secret = value.get("kind") == "Secret" and isinstance(value.get("metadata"), dict)
        out = {}
        for key, item in value.items():
            where = "%s.%s" % (path, key) if path else str(key)
            if is_secret and key in ("data", "stringData") and isinstance(item, dict):
                out[key] = {}
                for name, data in item.items():
                    out[key][name] = REDACTED % len(str(data or ""))
                    found.append("%s.%s" % (where, name))
            elif is_secret and key == "metadata":
                out[key] = _redact_last_applied(item, where, found, secrets)
            else:
                out[key] = redact(item, where, found, secrets)
        return out
    if isinstance(value, list):
        return [redact(item, "%s[%d]" % (path, index), found, secrets) for index, item in enumerate(value)]
    if isinstance(value, str):
        return _redact_text(value, path, found, secrets)
    return value


def _redact_last_applied(metadata, where, found, secrets):
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        metadata = dict(metadata, annotations=dict(annotations))
        metadata["annotations"][LAST_APPLIED] = REDACTED % len(str(annotations[LAST_APPLIED]))
        found.append("%s.annotations.%s" % (where, LAST_APPLIED))
    return redact(metadata, where, found, secrets)


def _redact_text(text, path, found, secrets):
    redacted = _PEM_PRIVATE_KEY.sub(lambda m: REDACTED % len(m.group(0)), text)
    for secret in secrets:
        if secret in redacted:
            redacted = redacted.replace(secret, REDACTED % len(secret))
    if redacted != text:
        found.append(path)
    return redacted


def drop_managed_fields(obj):
    """``obj`` (a Kubernetes object as a dict) without ``metadata.managedFields``, which only says which field manager
    set each field (kops' dumps carry it; it is most of an object's size and none of its diagnosis)."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(metadata, dict) and "managedFields" in metadata:
        obj = dict(obj, metadata={k: v for k, v in metadata.items() if k != "managedFields"})
    return obj


def listable_resources(get):
    """The resources kops' resource dumper lists: of ``/api/v1`` and the preferred version of each group of
    ``/apis``, those with the ``list`` verb, no subresources (``pods/log``), less :data:`IGNORED_RESOURCES`.

    :param get: ``get(path)`` -> the API's JSON answer as a dict (raises what the client raises).
    :returns: list of ``(group_version, resource name, kind)``, ``group_version`` ``v1`` or ``apps/v1``.
    """
    versions = [("v1", "/api/v1")]
    for group in get("/apis").get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        if preferred:
            versions.append((preferred, "/apis/" + preferred))
    found = []
    for group_version, path in versions:
        for resource in get(path).get("resources") or []:
            name = resource.get("name") or ""
            if "/" in name or name in IGNORED_RESOURCES or "list" not in (resource.get("verbs") or []):
                continue
            found.append((group_version, name, resource.get("kind")))
    return found


def kubernetes_objects(get, errors):
    """Every object of every :func:`listable_resources` resource, cluster-wide, ``managedFields`` dropped.

    :param get: as for :func:`listable_resources`.
    :param errors: a list that gets ``"<group_version>/<resource>: <error>"`` for each resource that could not be
        listed (the others are still read: a diagnostics dump takes what it can).
    :returns: dict ``{"<group_version>/<resource>": [objects]}`` of the resources that have objects, each object
        with its ``apiVersion`` and ``kind`` set (list answers leave them out).
    :raises Exception: what ``get`` raises when the discovery itself fails.
    """
    objects = {}
    for group_version, name, kind in listable_resources(get):
        prefix = "/api/v1" if group_version == "v1" else "/apis/" + group_version
        try:
            items = get("%s/%s" % (prefix, name)).get("items") or []
        except Exception as exc:  # the client raises many types; the dump records it and goes on
            errors.append("%s/%s: %s" % (group_version, name, first_line(exc)))
            continue
        if items:
            objects["%s/%s" % (group_version, name)] = [dict(drop_managed_fields(item), apiVersion=group_version, kind=kind) for item in items]
    return objects


def first_line(exc):
    """``"<type>: <first line of the message, at most 300 characters>"`` of an exception, for a report."""
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[0][:300] if text else "")


def object_counts(objects):
    """``{"<group_version>/<resource>": number of objects}`` of a :func:`kubernetes_objects` answer."""
    return {key: len(items) for key, items in sorted(objects.items())}
