# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An InstanceGroup's user data: the part types kops accepts, the MIME document kops builds from nodeup's script and
the additional parts (as kops' awsup does), and the size EC2 accepts."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import normalize_role

# pkg/apis/kops/validation/instancegroup.go:412-421 validUserDataTypes
USER_DATA_TYPES = (
    "text/x-include-once-url",
    "text/x-include-url",
    "text/cloud-config-archive",
    "text/upstart-job",
    "text/cloud-config",
    "text/part-handler",
    "text/x-shellscript",
    "text/cloud-boothook",
)


def check_user_data(parts):
    """``additional_user_data``: name and content required, type one of kops' list (instancegroup.go:423-438
    validateExtraUserData; the type is required too: IsValidValue refuses the empty string)."""
    for index, item in enumerate(parts):
        for key in ("name", "content"):
            if not item.get(key):
                raise RuleError("additional_user_data[%d].%s: required (instancegroup.go validateExtraUserData)" % (index, key))
        if item.get("type") not in USER_DATA_TYPES:
            raise RuleError(
                "additional_user_data[%d].type: %r is not one of %s (instancegroup.go validUserDataTypes)"
                % (index, item.get("type"), ", ".join(USER_DATA_TYPES))
            )


# EC2 user data: at most 16 KB in raw form, before base64 (EC2 RunInstances / launch template UserData). kops
# checks it for its Instance task only (upup/pkg/fi/cloudup/awstasks/instance.go:35 MaxUserDataSize = 16384);
# launch templates go to AWS unchecked (awstasks/launchtemplate_target_api.go:130-136), so an oversized one fails
# at ``update cluster --yes``, after the spec was stored.
MAX_USER_DATA = 16384


MIME_BOUNDARY = "MIMEBOUNDARY"


_MIME_HEAD = 'Content-Type: multipart/mixed; boundary="%s"\r\nMIME-Version: 1.0\r\n\r\n' % MIME_BOUNDARY


def aws_multipart_mime(boot_script, parts, bastion=False):
    """The user data kops renders for a group (bytes), as pkg/model/resources/nodeup.go:281-326 AWSMultipartMIME
    writes it: the nodeup script alone without additional parts; otherwise a multipart/mixed archive (boundary
    MIMEBOUNDARY) of nodeup.sh (not on bastions) and each part, headers in Go's mime/multipart order (sorted
    canonical keys), closed by ``\\r\\n--MIMEBOUNDARY--\\r\\n`` once (Close() writes its own closing line into a
    bufio.Writer that is never flushed again). ``compress_user_data`` gzips only the kube_env.yaml inside the
    nodeup script (nodeup.go:168-174): the additional parts are never compressed.

    :param boot_script: the nodeup script (str) as kops renders it for the group.
    :param parts: ``additional_user_data`` items (dicts with name, type, content).
    """
    if not parts:
        return boot_script.encode("utf-8")
    chunks = [_MIME_HEAD]
    items = ([] if bastion else [{"name": "nodeup.sh", "type": "text/x-shellscript", "content": boot_script}]) + list(parts)
    for index, part in enumerate(items):
        chunks.append(("\r\n--%s\r\n" if index else "--%s\r\n") % MIME_BOUNDARY)
        chunks.append('Content-Disposition: attachment; filename="%s"\r\n' % part.get("name"))
        chunks.append("Content-Transfer-Encoding: 7bit\r\n")
        chunks.append("Content-Type: %s\r\n" % part.get("type"))
        chunks.append("Mime-Version: 1.0\r\n\r\n")
        chunks.append(part.get("content") or "")
    chunks.append("\r\n--%s--\r\n" % MIME_BOUNDARY)
    return "".join(chunks).encode("utf-8")


def nodeup_script_of(user_data):
    """The nodeup script inside user data kops rendered (str): the nodeup.sh part of a MIMEBOUNDARY archive, or the
    whole text when there are no additional parts; None for a bastion archive (no nodeup part)."""
    if not user_data.startswith(_MIME_HEAD):
        return user_data
    marker = 'Content-Disposition: attachment; filename="nodeup.sh"\r\n'
    start = user_data.find(marker)
    if start < 0:
        return None
    body = user_data.index("\r\n\r\n", start) + 4
    end = user_data.find("\r\n--%s" % MIME_BOUNDARY, body)
    return user_data[body:end]


def user_data_problem(boot_script, spec, measured_from):
    """Why the user data kops would render for InstanceGroup ``spec`` (v1alpha2) exceeds EC2's limit (str naming
    ``additional_user_data``), or None. ``boot_script``: the group's nodeup script as kops last rendered it
    (``measured_from`` names the launch template it was read from)."""
    parts = spec.get("additionalUserData") or []
    rendered = aws_multipart_mime(boot_script, parts, normalize_role(spec.get("role")) == "Bastion")
    if len(rendered) <= MAX_USER_DATA:
        return None
    extra = sum(len((p.get("content") or "").encode("utf-8")) for p in parts)
    return (
        "additional_user_data: the launch template user data would be %d bytes, over EC2's limit of %d (nodeup "
        "script %d bytes as kops rendered it in %s, additional parts %d bytes, MIME framing the rest); EC2 would "
        "refuse it at update. Shrink the parts (compress_user_data compresses only kops' own kube_env inside the "
        "nodeup script, never additional parts), or fetch the larger part from S3 in a short script"
        % (len(rendered), MAX_USER_DATA, len(boot_script.encode("utf-8")), measured_from, extra)
    )
