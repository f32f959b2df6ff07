"""Fixes to moto's Route53 backend (CreateHostedZone caller references)."""

from emulator_patches import patch


@patch
def create_hosted_zone_refuses_a_repeated_caller_reference():
    """route53:CreateHostedZone with a CallerReference already used by a hosted zone.

    moto: creates a second zone, so a client retrying a request whose response was lost (botocore
    does, on a closed connection) ends with two zones of one name.
    AWS: HTTP 409 HostedZoneAlreadyExists ("Amazon Route 53 returns this error when a hosted zone has
    already been created with the specified CallerReference"); the retry creates nothing.
    """
    from moto.route53.exceptions import Route53ClientError
    from moto.route53.models import Route53Backend

    class HostedZoneAlreadyExists(Route53ClientError):
        def __init__(self, caller_reference):
            super().__init__("HostedZoneAlreadyExists", "A hosted zone has already been created with the specified caller reference %r." % caller_reference)

    original = Route53Backend.create_hosted_zone

    def create_hosted_zone(self, name, private_zone, caller_reference=None, *args, **kwargs):
        if caller_reference and any(z.caller_reference == caller_reference for z in self.zones.values()):
            raise HostedZoneAlreadyExists(caller_reference)
        return original(self, name, private_zone, caller_reference, *args, **kwargs)

    Route53Backend.create_hosted_zone = create_hosted_zone
