"""Fixes to moto's IAM backend (service-specific credentials, deleted users, AWS managed policies)."""

from emulator_patches import patch


@patch
def user_service_specific_credentials_can_be_listed():
    """iam:ListServiceSpecificCredentials.

    moto: NotImplementedError -> HTTP 500. amazon.aws.iam_user (state=absent) lists them before it
    deletes a user, so removing any user fails.
    AWS: the user's service-specific credentials (none unless created); NoSuchEntity for an unknown user.
    """
    from moto.core.responses import ActionResult
    from moto.iam.responses import IamResponse

    def list_service_specific_credentials(self):
        user_name = self._get_param("UserName")
        if user_name:
            self.backend.get_user(user_name)
        return ActionResult({"ServiceSpecificCredentials": []})

    IamResponse.list_service_specific_credentials = list_service_specific_credentials


@patch
def deleted_iam_user_does_not_break_the_state_dump():
    """GET /moto-api/data.json after iam:DeleteUser (the emulator's own state dump, not an AWS call).

    moto keeps every model instance it ever made in its dump; a deleted User's ``group_list``
    property then asks the backend for a user that no longer exists and raises NoSuchEntity, so
    the dump (Emulator.snapshot) answers HTTP 500 for the rest of the session. A deleted user
    belongs to no group.
    """
    from moto.iam.exceptions import NoSuchEntity
    from moto.iam.models import User

    original = User.group_list.fget

    def group_list(self):
        try:
            return original(self)
        except NoSuchEntity:
            return []

    User.group_list = property(group_list)


@patch
def aws_managed_policies_built_when_read():
    """A speed fix, no change of behaviour: the AWS-managed IAM policies of a backend are built when first read, from
    objects built once per account and partition.

    moto (with ``MOTO_IAM_LOAD_MANAGED_POLICIES``, which the emulator sets so that ``AmazonEC2FullAccess`` and the
    other policies of the guides can be attached) parses its 1,500-policy JSON and builds every policy object each
    time an IAM backend is made, and ``POST /moto-api/reset`` remakes the backend of every partition it holds: about
    11 of them, 2 s of CPU per reset, most of it for backends nobody reads before the next reset (measured with
    cProfile: the largest single cost of the test suite's resets). Here a backend's ``aws_managed_policies`` and
    ``managed_policies`` are made on first use; the AWS-managed ones are copies of the objects built the first time
    for that account and partition (each backend has its own attachment counts, tags and versions), as moto would
    have built them. A policy's id stays the same from one reset to the next, as an AWS-managed policy's id does on
    AWS.
    """
    from moto.iam.models import IAMBackend

    build, index = IAMBackend._init_aws_policies, IAMBackend._init_managed_policies  # moto's own, called when first read
    built = {}
    lazy = object()

    def fresh_copy(obj):
        made = object.__new__(type(obj))
        made.__dict__.update(obj.__dict__)
        return made

    def aws_policies(self):
        key = (self.account_id, self.region_name)
        if key not in built:
            built[key] = build(self)
        policies = []
        for policy in built[key]:
            mine = fresh_copy(policy)
            mine.tags = dict(policy.tags)
            mine.versions = [fresh_copy(version) for version in policy.versions]
            policies.append(mine)
        return policies

    def lazy_attribute(name, make):
        slot = "_kopsible_" + name

        def get(self):
            if slot not in self.__dict__:  # not made yet (nothing is stored for "not made": copies of the backend agree)
                self.__dict__[slot] = make(self)
            return self.__dict__[slot]

        def set_(self, value):
            if value is lazy:
                self.__dict__.pop(slot, None)
            else:
                self.__dict__[slot] = value

        return property(get, set_)

    IAMBackend._init_aws_policies = lambda self: lazy
    IAMBackend._init_managed_policies = lambda self: lazy
    IAMBackend.aws_managed_policies = lazy_attribute("aws_managed_policies", aws_policies)
    IAMBackend.managed_policies = lazy_attribute("managed_policies", index)
