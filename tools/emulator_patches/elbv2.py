"""Fixes to moto's Elastic Load Balancing v2 backend (target group names, deregistration, idempotent creates)."""

from emulator_patches import patch

# elbv2:CreateTargetGroup Name, as moto 5.2.5 checks it (elbv2/models.py create_target_group) and as
# the ELBv2 API reference states it: "can have a maximum of 32 characters, must contain only
# alphanumeric characters or hyphens, and must not begin or end with a hyphen" (no rule on "--").
MOTO_TARGET_GROUP_NAME_PATTERN = r"(?!.*--)(?!^-)(?!.*-$)^[A-Za-z0-9-]+$"


AWS_TARGET_GROUP_NAME_PATTERN = r"(?!^-)(?!.*-$)^[A-Za-z0-9-]+$"


class _ReWithAwsTargetGroupNames:
    """The ``re`` module as moto's elbv2 models see it, with the target-group name pattern as AWS has it.

    Only a ``re.match`` on moto's exact target-group pattern is changed; every other call is ``re``'s own.
    """

    def __getattr__(self, name):
        import re

        return getattr(re, name)

    @staticmethod
    def match(pattern, string, flags=0):
        import re

        if pattern == MOTO_TARGET_GROUP_NAME_PATTERN:
            pattern = AWS_TARGET_GROUP_NAME_PATTERN
        return re.match(pattern, string, flags)


@patch
def target_group_names_may_hold_consecutive_hyphens():
    """elbv2:CreateTargetGroup with a Name holding ``--``, e.g. ``kops-controller-cluster1--a1b2c3``.

    moto: an "undocumented validation" ``(?!.*--)`` refuses it (ValidationError), so a gossip cluster
    whose first label kops truncates next to a dash (``cluster1.k8s.local``: kops-controller target
    group ``kops-controller-cluster1--<hash>``) never gets its target group and ``update --yes`` times out.
    AWS: at most 32 characters, alphanumerics and hyphens, not beginning or ending with a hyphen
    (CreateTargetGroup, Name); those refusals stay.
    """
    from moto.elbv2 import models

    models.re = _ReWithAwsTargetGroupNames()


@patch
def deregistering_a_target_that_is_not_registered_succeeds():
    """elasticloadbalancing (v2) DeregisterTargets of an instance that is not (or no longer) registered: already
    deregistered, or draining after its termination.

    moto: ``InvalidTarget`` ("The specified target does not exist or is not in the same VPC as the target group").
    AWS: success, and nothing changes (chaostoolkit-aws issue #60: a DeregisterTargets naming a target that is not
    registered as named "will still return a 200, but no action is taken"); kops' drain loop relies on it, calling
    DeregisterTargets again every 5 s while the target drains (awsup/aws_cloud.go deregisterInstanceFromTargetGroup),
    as does an SDK retry of a DeregisterTargets whose answer was lost. ``InvalidTarget`` stays for an instance that
    does not exist.
    Effect on kops: kops deregisters each control-plane node of a cluster with several from the API target groups
    before draining it; in a full run (once, not reproduced alone) guide 001's rolling update stopped with
    "control-plane node not healthy after update ... InvalidTarget", the answer moto gives on both paths above.
    """
    from moto.elbv2.exceptions import InvalidTargetError
    from moto.elbv2.models import FakeTargetGroup

    deregister = FakeTargetGroup.deregister

    def known(self, target_id):
        if target_id in self.deregistered_targets or target_id in self.terminated_targets:
            return True
        return target_id.startswith("i-") and self.ec2_backend.get_instance_by_id(target_id) is not None

    def deregister_registered(self, targets):
        missing = [t for t in targets if t["Id"] not in self.targets]
        if any(not known(self, t["Id"]) for t in missing):
            raise InvalidTargetError()
        return deregister(self, [t for t in targets if t["Id"] in self.targets])

    FakeTargetGroup.deregister = deregister_registered


@patch
def elbv2_creates_with_the_same_settings_return_the_existing_object():
    """elasticloadbalancing (v2) CreateLoadBalancer, CreateTargetGroup and CreateListener repeated with the same
    settings, e.g. a retry of a request whose response was lost.

    moto: a second load balancer of the same name (its duplicate check compares ARNs, which hold a random id);
    DuplicateTargetGroupName; a second listener on the same port, whatever its settings (its check looks the port
    up among listener ARNs).
    AWS (API reference of each): "This operation is idempotent, which means that it completes at most one time. If
    you attempt to create multiple <load balancers | target groups | listeners> with the same settings, each call
    succeeds" (and returns the existing one); other settings under the same name (port, for a listener) fail as
    moto fails.
    """
    from moto.elbv2.exceptions import DuplicateListenerError, DuplicateLoadBalancerName, DuplicateTargetGroupName
    from moto.elbv2.models import ELBv2Backend

    create_load_balancer = ELBv2Backend.create_load_balancer
    create_target_group = ELBv2Backend.create_target_group
    create_listener = ELBv2Backend.create_listener

    def load_balancer(
        self, name, security_groups, subnet_ids, subnet_mappings=None, scheme="internet-facing", loadbalancer_type=None, ip_address_type="ipv4", tags=None
    ):
        for existing in self.load_balancers.values():
            if existing.name == name:
                wanted = sorted(subnet_ids or []) + sorted(m["SubnetId"] for m in subnet_mappings or [])
                same = (
                    existing.scheme == scheme
                    and existing.type == (loadbalancer_type or "application")
                    and sorted(s.id for s in existing.subnets) == sorted(wanted)
                    and sorted(existing.security_groups or []) == sorted(security_groups or [])
                )
                if not same:
                    raise DuplicateLoadBalancerName()
                return existing
        return create_load_balancer(self, name, security_groups, subnet_ids, subnet_mappings, scheme, loadbalancer_type, ip_address_type, tags)

    def target_group(self, name, **kwargs):
        for existing in self.target_groups.values():
            if existing.name == name:
                protocol = kwargs.get("protocol")
                same = (existing.protocol or None) == (protocol or existing.protocol or None) and str(existing.port) == str(kwargs.get("port"))
                same = same and existing.vpc_id == kwargs.get("vpc_id") and existing.target_type == (kwargs.get("target_type") or "instance")
                if not same:
                    raise DuplicateTargetGroupName()
                return existing
        return create_target_group(self, name, **kwargs)

    def listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions, alpn_policy=None, tags=None):
        balancer = self.load_balancers.get(load_balancer_arn)
        # moto's own check looks the port up among listener ARNs, so it never finds one: two listeners on one port
        existing = next((item for item in balancer.listeners.values() if str(item.port) == str(port)), None) if balancer is not None else None
        if existing is not None:
            same = existing.protocol == (protocol or "").upper() and [a.data for a in existing.default_actions] == list(actions)
            if not same:
                raise DuplicateListenerError()
            return existing
        return create_listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions, alpn_policy, tags)

    ELBv2Backend.create_load_balancer = load_balancer
    ELBv2Backend.create_target_group = target_group
    ELBv2Backend.create_listener = listener
