# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""EC2 reads of the kops modules that kops does not make for them (boto3 clients given by the caller)."""


def launch_template_user_data(ec2, names):
    """The user data (str) of the first of ``names`` (launch template names, kops names them ``<ig>.<cluster>``)
    that exists in EC2, at its latest version, with the name it came from: ``(text, name)`` or ``(None, None)``.
    One DescribeLaunchTemplateVersions call per name tried."""
    import base64

    for name in names:
        try:
            versions = ec2.describe_launch_template_versions(LaunchTemplateName=name, Versions=["$Latest"])
        except Exception as exc:  # botocore ClientError: not found (InvalidLaunchTemplateName.NotFoundException)
            if "NotFound" in str(getattr(exc, "response", {}).get("Error", {}).get("Code", "")) or "NotFound" in str(exc):
                continue
            raise
        for version in versions.get("LaunchTemplateVersions", []):
            data = (version.get("LaunchTemplateData") or {}).get("UserData")
            if data:
                return base64.b64decode(data).decode("utf-8", "replace"), name
    return None, None
