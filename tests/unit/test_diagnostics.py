"""Issue 34 item 5: the diagnostics dump (_kops.diagnostics): what kops' resource dumper lists (pkg/dump/
resourcedumper.go: the preferred version of every group, resources with the list verb, no subresources, less its
ignoredResources), and the redaction kops does not do (Secret values, PEM private keys, the run's credentials)."""

import base64

from ansible_collections.kopsible.kops.plugins.module_utils._kops import diagnostics

KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvX\nabc\n-----END RSA PRIVATE KEY-----"
CERT = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----"


def secret(**data):
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "kube-system", "annotations": {diagnostics.LAST_APPLIED: '{"data":%s}' % encoded, "a": "b"}},
        "data": encoded,
        "type": "kubernetes.io/tls",
    }


def test_secret_values_and_their_last_applied_copy_are_replaced_keys_kept():
    found = []
    obj = secret(**{"tls.key": KEY, "tls.crt": CERT})
    out = diagnostics.redact({"kubernetes": {"v1/secrets": [obj]}}, found=found)
    kept = out["kubernetes"]["v1/secrets"][0]
    assert sorted(kept["data"]) == ["tls.crt", "tls.key"]
    assert all(v.startswith("<redacted: ") for v in kept["data"].values())
    assert kept["metadata"]["annotations"][diagnostics.LAST_APPLIED].startswith("<redacted: ")
    assert kept["metadata"]["annotations"]["a"] == "b" and kept["type"] == "kubernetes.io/tls"
    assert obj["data"]["tls.key"] == base64.b64encode(KEY.encode()).decode()  # the input is not changed
    assert sorted(found) == [
        "kubernetes.v1/secrets[0].data.tls.crt",
        "kubernetes.v1/secrets[0].data.tls.key",
        "kubernetes.v1/secrets[0].metadata.annotations." + diagnostics.LAST_APPLIED,
    ]


def test_string_data_of_a_secret_is_replaced_too():
    out = diagnostics.redact({"kind": "Secret", "metadata": {"name": "x"}, "stringData": {"password": "hunter22"}})
    assert out["stringData"] == {"password": "<redacted: 8 bytes>"}


def test_a_pem_private_key_anywhere_is_replaced_and_a_certificate_is_not():
    found = []
    text = "before\n%s\nafter\n%s" % (KEY, CERT)
    out = diagnostics.redact({"kind": "ConfigMap", "data": {"bundle": text}}, found=found)
    assert "PRIVATE KEY" not in out["data"]["bundle"] and "MIIEow" not in out["data"]["bundle"]
    assert out["data"]["bundle"].startswith("before\n<redacted: ") and CERT in out["data"]["bundle"]
    assert found == ["data.bundle"]


def test_every_pem_private_key_label_and_a_truncated_block():
    for label in ("PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY"):
        block = "-----BEGIN %s-----\nAAAA\n-----END %s-----" % (label, label)
        assert diagnostics.redact(block) == "<redacted: %d bytes>" % len(block)
    assert "AAAA" not in diagnostics.redact("x -----BEGIN PRIVATE KEY-----\nAAAA")  # cut off: redacted to the end


def test_the_runs_credentials_are_replaced_wherever_they_appear():
    found = []
    out = diagnostics.redact(["id AKIAEXAMPLE key wJalrXUtnFEMI/K7MDENG", 3, None], found=found, secrets=["wJalrXUtnFEMI/K7MDENG", "", "ab", None])
    assert out == ["id AKIAEXAMPLE key <redacted: 21 bytes>", 3, None] and found == ["[0]"]


def test_a_configmap_named_kind_secret_inside_a_field_is_not_a_secret_object():
    # only an object whose kind is Secret and that has metadata: a field called "data" elsewhere is left as it is
    value = {"kind": "Secret", "data": {"k": "v"}}
    assert diagnostics.redact(value) == value


DISCOVERY = {
    "/apis": {
        "groups": [
            {"name": "apps", "preferredVersion": {"groupVersion": "apps/v1"}},
            {"name": "autoscaling", "preferredVersion": {"groupVersion": "autoscaling/v2"}},
        ]
    },
    "/api/v1": {
        "resources": [
            {"name": "pods", "kind": "Pod", "verbs": ["get", "list"]},
            {"name": "pods/log", "kind": "Pod", "verbs": ["get"]},
            {"name": "componentstatuses", "kind": "ComponentStatus", "verbs": ["list"]},
            {"name": "podtemplates", "kind": "PodTemplate", "verbs": ["list"]},
            {"name": "bindings", "kind": "Binding", "verbs": ["create"]},
            {"name": "secrets", "kind": "Secret", "verbs": ["list"]},
        ]
    },
    "/apis/apps/v1": {
        "resources": [
            {"name": "deployments", "kind": "Deployment", "verbs": ["list"]},
            {"name": "controllerrevisions", "kind": "ControllerRevision", "verbs": ["list"]},
        ]
    },
    "/apis/autoscaling/v2": {"resources": [{"name": "horizontalpodautoscalers", "kind": "HorizontalPodAutoscaler", "verbs": ["list"]}]},
}


def test_listable_resources_are_kops_resource_dumpers():
    assert diagnostics.listable_resources(DISCOVERY.__getitem__) == [
        ("v1", "pods", "Pod"),
        ("v1", "secrets", "Secret"),
        ("apps/v1", "deployments", "Deployment"),
        ("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    ]


def test_objects_get_their_kind_lose_managed_fields_and_a_failed_list_is_recorded():
    answers = dict(DISCOVERY)
    answers["/api/v1/pods"] = {"items": [{"metadata": {"name": "p", "managedFields": [{"manager": "kubelet"}]}, "spec": {}}]}
    answers["/api/v1/secrets"] = {"items": [{"metadata": {"name": "s"}, "data": {"k": "dg=="}}]}
    answers["/apis/apps/v1/deployments"] = {"items": []}

    def get(path):
        if path == "/apis/autoscaling/v2/horizontalpodautoscalers":
            raise OSError("connection reset")
        return answers[path]

    errors = []
    objects = diagnostics.kubernetes_objects(get, errors)
    assert objects == {
        "v1/pods": [{"metadata": {"name": "p"}, "spec": {}, "apiVersion": "v1", "kind": "Pod"}],
        "v1/secrets": [{"metadata": {"name": "s"}, "data": {"k": "dg=="}, "apiVersion": "v1", "kind": "Secret"}],
    }
    assert errors == ["autoscaling/v2/horizontalpodautoscalers: OSError: connection reset"]
    assert diagnostics.redact(objects)["v1/secrets"][0]["data"] == {"k": "<redacted: 4 bytes>"}  # kind set: redacted
    assert diagnostics.object_counts(objects) == {"v1/pods": 1, "v1/secrets": 1}
