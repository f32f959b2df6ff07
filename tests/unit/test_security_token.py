"""AWX's AWS credential injects the STS token as AWS_SECURITY_TOKEN (awx/main/models/credential/injectors.py);
kops_common.security_token_fallback takes it only where nothing else gives a token or a profile."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import security_token_fallback


@pytest.mark.parametrize(
    "params, environ, expected",
    [
        ({"session_token": None, "profile": None}, {"AWS_SECURITY_TOKEN": "awx"}, "awx"),
        ({"session_token": None, "profile": None}, {}, None),
        ({"session_token": "given", "profile": None}, {"AWS_SECURITY_TOKEN": "awx"}, None),
        ({"session_token": None, "profile": None}, {"AWS_SESSION_TOKEN": "sdk", "AWS_SECURITY_TOKEN": "awx"}, None),
        ({"session_token": None, "profile": "ops"}, {"AWS_SECURITY_TOKEN": "awx"}, None),
        ({"session_token": None, "profile": None}, {"AWS_SECURITY_TOKEN": ""}, None),
    ],
)
def test_security_token_fallback(params, environ, expected):
    assert security_token_fallback(params, environ) == expected
