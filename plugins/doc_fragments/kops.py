# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    """Options shared by every module that runs kops."""

    DOCUMENTATION = r"""
options:
  state_store:
    description:
      - The kOps state store, e.g. C(s3://my-kops-state). Falls back to the E(KOPS_STATE_STORE) environment variable.
    type: str
  kops_binary:
    description:
      - Path or command name of the kops binary (v1.36 is what this collection is tested with).
    type: str
    default: kops
  kops_env:
    description:
      - Extra environment variables for kops, e.g. C(KOPS_FEATURE_FLAGS) or C(KOPS_BASE_URL) for a local artifact mirror.
      - Credentials should come from the AWS options instead; this is not logged but is not treated as secret either.
    type: dict
    default: {}
  kops_timeout:
    description: Seconds one kops command may run before it is stopped.
    type: int
    default: 1800
notes:
  - kops receives the module's AWS settings (O(region), O(endpoint_url), credentials or O(profile)) as
    environment variables; with O(endpoint_url) the state store is reached through the same endpoint
    (C(S3_ENDPOINT)), which is how the collection runs against a local AWS emulator.
"""
