"""IAM enforcement: moto's request authorization made to evaluate the actions and resources AWS evaluates, refusals
answered in each service's protocol and recorded (docs/emulator.md "IAM enforcement")."""

from emulator_patches import patch

_IAM_ARN_PARAMETERS = (
    ("RoleName", "role"),
    ("InstanceProfileName", "instance-profile"),
    ("UserName", "user"),
    ("GroupName", "group"),
)


def record_iam_refusals(record, record_allowed=None):
    """Call ``record(entry)`` for every request moto's authorization refuses, ``entry`` a dict ``{"action": "ec2:CreateVpc",
    "resource": ARN or "*", "principal": caller ARN or None, "code": "AccessDenied" | "InvalidClientTokenId" |
    "SignatureDoesNotMatch", "client": the first word of the User-Agent, e.g. "aws-sdk-go-v2/1.39.2"}``: the
    enforcement mode's list of refusals (a client that retries or hides the
    error still leaves its refusal here). ``record_allowed(action, resource, principal)``, if given, is called for
    every request whose policies allowed it (the action and the resource ARN it was evaluated on)."""
    from moto.iam.access_control import IAMRequestBase

    original_permitted = IAMRequestBase.check_action_permitted

    def check_action_permitted(self, resource):
        self._kopsible_resource = resource
        answer = original_permitted(self, resource)  # raises when refused
        if record_allowed is not None:
            access_key = getattr(self, "_access_key", None)
            record_allowed(self._action, resource, access_key.arn if access_key is not None else None)
        return answer

    IAMRequestBase.check_action_permitted = check_action_permitted

    def recording(method, code):
        def wrapper(self, *args):
            access_key = getattr(self, "_access_key", None)
            record(
                {
                    "action": self._action,
                    "resource": getattr(self, "_kopsible_resource", "*"),
                    "principal": access_key.arn if access_key is not None else None,
                    "code": code,
                    "client": (self._headers.get("User-Agent") or "").split(" ")[0],
                }
            )
            return method(self, *args)

        return wrapper

    for cls in IAMRequestBase.__subclasses__():
        cls._raise_access_denied = recording(cls._raise_access_denied, "AccessDenied")
        cls._raise_invalid_access_key = recording(cls._raise_invalid_access_key, "InvalidClientTokenId")
        cls._raise_signature_does_not_match = recording(cls._raise_signature_does_not_match, "SignatureDoesNotMatch")


@patch
def iam_actions_are_authorized_on_the_named_resource():
    """IAM authorization of iam:* calls that name a role, instance profile, user, group or OpenID Connect provider.

    moto: checks every IAM action against the resource ``*``, except that a call naming an *existing* role is
    checked against that role's ARN; a policy statement whose Resource is an ARN pattern therefore never allows
    ``iam:CreateRole``, ``iam:CreateInstanceProfile``, ``iam:AddRoleToInstanceProfile``,
    ``iam:CreateOpenIDConnectProvider``... (the least-privilege policy's ``ClusterRoles`` statement,
    ``arn:aws:iam::*:role/*.<cluster suffix>``): kops' ``update cluster --yes`` is refused.
    AWS: the resource of such a call is the ARN of the entity it names, existing or being created
    (Service Authorization Reference, "Actions defined by AWS Identity and Access Management":
    ``arn:${Partition}:iam::${Account}:role/${RoleNameWithPath}``, ``instance-profile/...``, ``user/...``,
    ``group/...``, ``oidc-provider/${OidcProviderName}``).
    """
    from moto.iam.responses import IamResponse

    def determine_resource(self):
        base = "arn:%s:iam::%s:" % (self.partition, self.current_account)
        data = self.data or {}

        def first(name):
            value = data.get(name)
            return value[0] if isinstance(value, list) and value else value

        for parameter, kind in _IAM_ARN_PARAMETERS:
            name = first(parameter)
            if name:
                path = first("Path") if self._get_action().startswith("Create") else None
                if kind == "role":
                    try:
                        return self.backend.get_role(name).arn
                    except Exception:  # noqa: BLE001  (NoSuchEntity: the role this call creates)
                        pass
                return "%s%s%s%s" % (base, kind, path or "/", name)
        provider = first("OpenIDConnectProviderArn")
        if provider:
            return provider
        url = first("Url")
        if url and self._get_action() == "CreateOpenIDConnectProvider":
            return "%soidc-provider/%s" % (base, url.split("://", 1)[-1].rstrip("/"))
        return "*"

    IamResponse._determine_resource = determine_resource


@patch
def route53_actions_are_authorized_on_the_hosted_zone():
    """IAM authorization of Route53 calls on one hosted zone (ChangeResourceRecordSets, GetHostedZone,
    ListResourceRecordSets, DeleteHostedZone, ChangeTagsForResource...).

    moto: checks them against the resource ``*``, so a statement limited to
    ``arn:aws:route53:::hostedzone/Z...`` (the least-privilege policy's ``Records``) never allows them.
    AWS: the resource is ``arn:${Partition}:route53:::hostedzone/${Id}`` (Service Authorization Reference, Route 53).
    """
    import re

    from moto.route53.responses import Route53

    zone_in_path = re.compile(r"/hostedzone/([^/?]+)")

    def determine_resource(self):
        match = zone_in_path.search(self.path or "")
        if match:
            return "arn:%s:route53:::hostedzone/%s" % (self.partition, match.group(1))
        return "*"

    Route53._determine_resource = determine_resource


# S3 request -> IAM action, as AWS names them (Service Authorization Reference, Amazon S3; "Required permissions for
# Amazon S3 API operations"): the entries moto 5.2.5 lacks or names differently. (resource type, method, query key).
_S3_IAM_ACTIONS = {
    ("BUCKET", "HEAD", "DEFAULT"): "ListBucket",  # HeadBucket; moto: s3:HeadBucket, an action IAM does not have
    ("BUCKET", "GET", "publicAccessBlock"): "GetBucketPublicAccessBlock",
    ("BUCKET", "PUT", "publicAccessBlock"): "PutBucketPublicAccessBlock",
    ("BUCKET", "DELETE", "publicAccessBlock"): "PutBucketPublicAccessBlock",
    ("BUCKET", "GET", "encryption"): "GetEncryptionConfiguration",
    ("BUCKET", "PUT", "encryption"): "PutEncryptionConfiguration",
    ("BUCKET", "DELETE", "encryption"): "PutEncryptionConfiguration",
    ("BUCKET", "GET", "ownershipControls"): "GetBucketOwnershipControls",
    ("BUCKET", "PUT", "ownershipControls"): "PutBucketOwnershipControls",
    ("BUCKET", "DELETE", "ownershipControls"): "PutBucketOwnershipControls",
    ("BUCKET", "GET", "object-lock"): "GetBucketObjectLockConfiguration",
    ("BUCKET", "PUT", "object-lock"): "PutBucketObjectLockConfiguration",
    ("BUCKET", "GET", "replication"): "GetReplicationConfiguration",
    ("BUCKET", "PUT", "replication"): "PutReplicationConfiguration",
    ("BUCKET", "DELETE", "replication"): "PutReplicationConfiguration",
    ("BUCKET", "GET", "requestPayment"): "GetBucketRequestPayment",
    ("BUCKET", "PUT", "requestPayment"): "PutBucketRequestPayment",
    ("KEY", "HEAD", "versionId"): "GetObjectVersion",
    ("KEY", "GET", "attributes"): "GetObjectAttributes",
    ("KEY", "DELETE", "tagging"): "DeleteObjectTagging",
}


@patch
def s3_requests_are_authorized_as_the_iam_actions_aws_names():
    """IAM authorization of S3 requests: the action a request is checked as, and DeleteObjects.

    moto: checks HeadBucket as ``s3:HeadBucket`` (IAM has no such action: no policy allows it but ``s3:*``), the
    bucket's public access block as ``s3:ListBucket`` / ``s3:CreateBucket`` (its table keys the query as
    ``public_access_block``, requests send ``publicAccessBlock``), encryption and ownership controls as
    ``s3:ListBucket`` / ``s3:CreateBucket``, DeleteObjectTagging as ``s3:DeleteObject``; and checks DeleteObjects
    (``POST ?delete``, how ``kops delete cluster`` empties the state store, util/pkg/vfs/s3fs.go) as one
    ``s3:DeleteObject`` on the *bucket*, so a policy that allows ``s3:DeleteObject`` on ``arn:aws:s3:::BUCKET/*``
    deletes nothing: every key comes back AccessDenied (kops ignores per-key errors: the objects stay).
    AWS: HeadBucket needs ``s3:ListBucket``; ``s3:GetBucketPublicAccessBlock`` / ``s3:PutBucketPublicAccessBlock``,
    ``s3:GetEncryptionConfiguration`` / ``s3:PutEncryptionConfiguration``, ``s3:GetBucketOwnershipControls`` /
    ``s3:PutBucketOwnershipControls``...; DeleteObjects checks ``s3:DeleteObject`` (``s3:DeleteObjectVersion`` for a
    key with a version id) on each key's ARN and reports each refused key as an ``AccessDenied`` error.
    """
    import xmltodict
    from moto.core.responses import ActionResult
    from moto.iam.access_control import PermissionResult
    from moto.s3 import responses as s3_responses
    from moto.s3.exceptions import MalformedXML, S3AccessDeniedError
    from moto.utilities.utils import get_partition

    S3Response = s3_responses.S3Response
    original_set_action = S3Response._set_action
    original_authorize = S3Response._authenticate_and_authorize_s3_action

    def set_action(self, action_resource_type, method, querystring):
        # moto's table also names the operation a response is serialized as: it stays; AWS's IAM action is kept aside
        original_set_action(self, action_resource_type, method, querystring)
        named = [a for (kind, verb, key), a in _S3_IAM_ACTIONS.items() if (kind, verb) == (action_resource_type, method) and key in querystring]
        self._kopsible_iam_action = named[-1] if named else _S3_IAM_ACTIONS.get((action_resource_type, method, "DEFAULT"))

    def authorize(self, bucket_name=None, key_name=None):
        action, self._kopsible_iam_action = getattr(self, "_kopsible_iam_action", None), None
        if action is None:
            return original_authorize(self, bucket_name=bucket_name, key_name=key_name)
        named, self.data["Action"] = self.data.get("Action"), action
        try:
            return original_authorize(self, bucket_name=bucket_name, key_name=key_name)
        finally:
            self.data["Action"] = named

    S3Response._set_action = set_action
    S3Response._authenticate_and_authorize_s3_action = authorize
    original_post = S3Response._bucket_response_post

    def bucket_response_post(self, request, bucket_name):
        if request.headers.get("Content-Length"):
            self.path = self._get_path(request)
            if self.is_delete_keys():
                return self._bucket_response_delete_keys(bucket_name)
        return original_post(self, request, bucket_name)

    def bucket_response_delete_keys(self, bucket_name, authenticated=True):
        body = xmltodict.parse(self.body, strip_whitespace=False)
        bypass_retention = self.headers.get("x-amz-bypass-governance-retention", "").lower() == "true"
        objects = body["Delete"].get("Object", [])
        objects = objects if isinstance(objects, list) else [objects]
        if not objects:
            raise MalformedXML()
        bucket = self.backend.get_bucket(bucket_name)
        partition = get_partition(self.region)
        allowed, errors = [], []
        for obj in objects:
            self.data["Action"] = "DeleteObjectVersion" if obj.get("VersionId") else "DeleteObject"
            try:
                self._authenticate_and_authorize_s3_action(bucket_name=bucket_name, key_name=obj["Key"])
            except S3AccessDeniedError:
                errors.append({"Key": obj["Key"], "Code": "AccessDenied", "Message": "Access Denied"})
                continue
            if bucket.get_permission("s3:DeleteObject", "arn:%s:s3:::%s/%s" % (partition, bucket_name, obj["Key"])) == PermissionResult.DENIED:
                errors.append({"Key": obj["Key"], "Code": "AccessDenied", "Message": "Access Denied"})
            else:
                allowed.append(obj)
        deleted, locked = self.backend.delete_objects(bucket_name, allowed, bypass_retention) if allowed else ([], [])
        errors += [{"Key": k, "Code": "AccessDenied", "Message": "Access Denied because object protected by object lock."} for k in locked]
        deleted_objects = [
            {"Key": k, "VersionId": v or None, "DeleteMarkerVersionId": dv or None, "DeleteMarker": True if dv else None} for k, v, dv in deleted
        ]
        self.data["Action"] = "DeleteObjects"
        return self.serialized(ActionResult({"Deleted": deleted_objects, "Errors": errors}))

    S3Response._bucket_response_post = bucket_response_post
    S3Response._bucket_response_delete_keys = bucket_response_delete_keys


@patch
def iam_refusals_answer_in_the_service_protocol():
    """The error of a request IAM authorization refuses (AccessDenied, InvalidClientTokenId, SignatureDoesNotMatch).

    moto: answers every service with the Query protocol's XML (``<ErrorResponse><Errors><Error>``), which clients of
    the JSON services (SQS, EventBridge) and of Route53 (REST-XML: ``<ErrorResponse><Error>``) cannot read: boto3
    reports ``An error occurred (403)`` / ``An error occurred ()`` with no code or message, so the refused action is
    not named; EC2's refusal is ``AccessDenied``; S3's says only ``Access Denied``; none names the resource.
    AWS: each service's own error format; EC2 answers ``UnauthorizedOperation`` ("You are not authorized to perform
    this operation. User: ... is not authorized to perform: ec2:CreateVpc on resource: ..."); the other services
    ``AccessDenied`` (JSON services ``AccessDeniedException``) with "User: ARN is not authorized to perform: ACTION on
    resource: RESOURCE" (S3 too, for a same-account caller: AWS documents the message in "Access denied error
    messages" of the IAM User Guide).
    """
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.core.exceptions import JsonRESTError, _RESTError
    from moto.iam.access_control import IAMRequest, S3IAMRequest
    from moto.s3.exceptions import S3AccessDeniedError

    def refusal_message(request):
        return "User: %s is not authorized to perform: %s on resource: %s" % (
            request._access_key.arn,
            request._action,
            getattr(request, "_kopsible_resource", "*"),
        )

    def raise_access_denied(self):
        if self._service == "ec2":
            error = _RESTError("UnauthorizedOperation", "You are not authorized to perform this operation. " + refusal_message(self))
        else:
            error = _RESTError("AccessDenied", refusal_message(self))
        error.code = 403
        raise error

    IAMRequest._raise_access_denied = raise_access_denied
    original_s3 = S3IAMRequest._raise_access_denied

    def raise_s3_access_denied(self):
        try:
            original_s3(self)
        except S3AccessDeniedError as error:
            error.message = refusal_message(self)
            raise

    S3IAMRequest._raise_access_denied = raise_s3_access_denied
    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def authenticate_and_authorize(self, iam_request_cls, resource="*"):
        try:
            return original(self, iam_request_cls, resource)
        except JsonRESTError:
            raise
        except _RESTError as error:
            target = self.headers.get("X-Amz-Target") or self.headers.get("x-amz-target")
            content_type = self.headers.get("Content-Type") or ""
            if target or "json" in content_type:
                made = JsonRESTError(error.error_type + ("Exception" if error.error_type == "AccessDenied" else ""), error.message)
            elif getattr(self, "service_name", None) == "route53":
                made = _RESTError(error.error_type, error.message)
                made.description = made.description.replace("<Errors>", "").replace("</Errors>", "")
            elif getattr(self, "service_name", None) == "ec2":
                made = _RESTError(error.error_type, error.message)
                made.description = made.description.replace("<ErrorResponse>", "<Response>").replace("</ErrorResponse>", "</Response>")
            else:
                raise
            made.code = error.code
            raise made from error

    ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate_and_authorize


@patch
def request_signature_is_checked_over_the_raw_body():
    """The SigV4 signature check of IAM enforcement, for a request with no body (e.g. route53:ListHostedZones, a GET).

    moto: recomputes the signature over ``self._body or self._data`` (the form fields of a Query POST, whose body
    its parsing consumed); a GET has no body, and for REST services
    ``_data`` is the request's *headers*, which botocore form-encodes as the payload: the payload hash differs and
    every such call by a correctly signing client (boto3, kops' aws-sdk-go-v2) is ``SignatureDoesNotMatch``.
    AWS: the payload hashed into the canonical request is the request's body as sent (empty for a GET, HEAD or
    DELETE).
    """
    from botocore.awsrequest import AWSRequest
    from moto.iam.access_control import IAMRequestBase

    def create_aws_request(self):
        signed_headers = self._get_string_between("SignedHeaders=", ",", self._headers["Authorization"]).split(";")
        headers = self._create_headers_for_aws_request(signed_headers, self._headers)
        # a Query-protocol POST's form body is consumed by moto's parsing: ``_data`` holds it (moto's own choice, kept)
        payload = self._body or (b"" if self._method in ("GET", "HEAD", "DELETE") else self._data)
        request = AWSRequest(method=self._method, url=self._path, data=payload, headers=headers)
        request.context["timestamp"] = headers["X-Amz-Date"]
        return request

    IAMRequestBase._create_aws_request = create_aws_request


@patch
def auto_scaling_group_with_an_instance_profile_needs_pass_role():
    """IAM authorization of autoscaling:CreateAutoScalingGroup / UpdateAutoScalingGroup with a launch template whose
    instances get an IAM instance profile (every kops group: masters.<cluster>, nodes.<cluster>...).

    moto: checks only the action the request names; ``iam:PassRole`` is never checked, so a policy without it (or
    with it on other roles) creates groups whose instances run as any role.
    AWS: "To create or update an Auto Scaling group with a launch template that specifies an instance profile, the
    caller needs ``iam:PassRole`` on the profile's role" (EC2 Auto Scaling User Guide, "Launch template support",
    "Permissions to pass an IAM role"); refused with AccessDenied naming ``iam:PassRole`` and the role.
    The emulator now checks ``iam:PassRole`` on each role of the profile that the request's launch template version
    (top level, or in its MixedInstancesPolicy) names, before the group is made or changed.
    """
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.ec2.models import ec2_backends
    from moto.iam.access_control import IAMRequest
    from moto.iam.models import iam_backends

    class PassRoleRequest(IAMRequest):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._action = "iam:PassRole"

    def passed_roles(self):
        """ARNs of the roles the request's launch template version hands to its instances (list of str)."""
        params = self._get_params()
        spec = self._get_param("LaunchTemplate", {}) or ((params.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get(
            "LaunchTemplateSpecification"
        )
        if not spec:
            return []
        ec2 = ec2_backends[self.current_account][self.region]
        try:
            if spec.get("LaunchTemplateId"):
                template = ec2.get_launch_template(spec["LaunchTemplateId"])
            else:
                template = ec2.get_launch_template_by_name(spec.get("LaunchTemplateName"))
            version = template.get_version(spec.get("Version") or "$Default")
        except Exception:  # noqa: BLE001  (no such template or version: moto's own call answers that)
            return []
        profile_spec = version.data.get("IamInstanceProfile") or {}
        iam = iam_backends[self.current_account][self.partition]
        try:
            if profile_spec.get("Arn"):
                profile = iam.get_instance_profile_by_arn(profile_spec["Arn"])
            elif profile_spec.get("Name"):
                profile = iam.get_instance_profile(profile_spec["Name"])
            else:
                return []
        except Exception:  # noqa: BLE001  (no such profile: not a PassRole question)
            return []
        return [role.arn for role in profile.roles]

    for action in ("create_auto_scaling_group", "update_auto_scaling_group"):
        original = getattr(AutoScalingResponse, action)

        def wrapper(self, _original=original):
            for role_arn in passed_roles(self):
                self._authenticate_and_authorize_action(PassRoleRequest, role_arn)
            return _original(self)

        setattr(AutoScalingResponse, action, wrapper)
