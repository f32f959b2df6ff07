"""Issue 17 item 3: the argument specs say what they can (suboptions of every dict option, mutually_exclusive,
required_if), their documentation says the same, and the suboptions keep a dict option a patch of the stored value
(a key not given is not turned into ``null``)."""

import importlib
import json
import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kopsible.kops.plugins.module_utils._kops import common as kops_common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py") and not f.startswith("_"))
# Dict options whose keys are the user's own (labels, tags, environment variables, free spec fields, the cluster names of
# fleet_run's approved plan and inventory, a selection's cloud labels): no suboptions.
FREE_FORM = {"node_labels", "cloud_labels", "spec", "kops_env", "approved", "kops_versions_applied", "inventory", "labels"}  # keys are names the user chooses


def module(name):
    return importlib.import_module("ansible_collections.kopsible.kops.plugins.modules." + name)


def documented(name):
    return yaml.safe_load(module(name).DOCUMENTATION)["options"]


def dict_options(spec, path=""):
    """``(dotted path, option spec)`` for every option (and suboption) of type dict or list of dicts."""
    for key, option in spec.items():
        if option.get("type") == "dict" or option.get("elements") == "dict":
            yield path + key, option
        if option.get("options"):
            yield from dict_options(option["options"], path + key + ".")


@pytest.mark.parametrize("name", MODULES)
def test_every_dict_option_has_suboptions(name):
    spec = module(name).argument_spec()
    missing = [path for path, option in dict_options(spec) if not option.get("options") and path.split(".")[-1] not in FREE_FORM]
    assert missing == []


def same(doc, spec, path):
    """Differences between a documented option and its argument spec (list of str), recursively."""
    found = []
    for key in ("type", "elements", "choices"):
        want = spec.get(key) if key != "type" else (spec.get("type") or "str")
        if key == "choices" and want is not None:
            want = list(want)
        if doc.get(key) != want:
            found.append("%s.%s: documented %r, argument spec %r" % (path, key, doc.get(key), want))
    if bool(doc.get("required")) != bool(spec.get("required")):
        found.append("%s.required differs" % path)
    docs, subs = doc.get("suboptions") or {}, spec.get("options") or {}
    if set(docs) != set(subs):
        found.append("%s: documented suboptions %s, argument spec %s" % (path, sorted(docs), sorted(subs)))
    for key in set(docs) & set(subs):
        found += same(docs[key], subs[key], path + "." + key)
    return found


@pytest.mark.parametrize("name", MODULES)
def test_documentation_matches_the_argument_spec(name):
    spec, docs = module(name).argument_spec(), documented(name)
    found = []
    for key in set(spec) & set(docs):
        found += same(docs[key], spec[key], key)
    assert found == []


def test_a_dict_option_stays_a_patch(capsys):
    """Keys not given stay absent (the stored value keeps them); ``null`` stays (it removes the stored key); list
    items are pruned alike, so an external load balancer without a name is not stored as ``loadBalancerName: null``."""
    spec = module("kops_instancegroup").argument_spec()
    given = {
        "cluster": "c1.k8s.local",
        "name": "nodes",
        "instance_metadata": {"http_tokens": None},
        "mixed_instances_policy": {"instance_requirements": {"cpu": {"min": 2}}},
        "external_load_balancers": [{"target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t/1"}],
    }
    with patch_module_args(given):
        params = kops_common.KopsModule(argument_spec=spec, supports_check_mode=True).params
    assert params["instance_metadata"] == {"http_tokens": None}
    assert params["mixed_instances_policy"] == {"instance_requirements": {"cpu": {"min": 2}}}
    assert params["external_load_balancers"] == given["external_load_balancers"]
    assert params["warm_pool"] is None
    assert capsys.readouterr().out == ""


def errors(name, params, **checks):
    spec = module(name).argument_spec()
    return " | ".join(str(e) for e in ArgumentSpecValidator(spec, **checks).validate(params).errors)


@pytest.mark.parametrize(
    "given, message",
    [
        ({"instance_metadata": {"tokens": "required"}}, "instance_metadata.tokens"),
        ({"warm_pool": {"min_size": "x"}}, "argument 'min_size' is of type str found in 'warm_pool'"),
        ({"root_volume": {"size": 1.5}}, "argument 'size' is of type float found in 'root_volume'"),
        ({"additional_user_data": [{"name": "a.sh", "content": "x"}]}, "missing required arguments: type found in additional_user_data"),
        ({"additional_user_data": [{"name": "a.sh", "type": "text/x-python", "content": "x"}]}, "found in additional_user_data"),
        (
            {"external_load_balancers": [{"load_balancer_name": "a", "target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/t/1"}]},
            "parameters are mutually exclusive: load_balancer_name|target_group_arn found in external_load_balancers",
        ),
    ],
)
def test_instance_group_suboption_messages_name_the_option(given, message):
    assert message in errors("kops_instancegroup", dict({"cluster": "c1.k8s.local", "name": "nodes"}, **given))


def test_failure_shape_is_json(capsys):
    """A suboption error fails through fail_json (JSON on stdout), never a traceback."""
    spec = module("kops_instancegroup").argument_spec()
    with patch_module_args({"cluster": "c1.k8s.local", "name": "nodes", "warm_pool": {"pool": 1}}):
        with pytest.raises(SystemExit):
            kops_common.KopsModule(argument_spec=spec, supports_check_mode=True)
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and "warm_pool.pool" in result["msg"]


def test_validate_timeout_is_a_deprecated_alias_of_validation_timeout():
    """One name per duration across modules (rolling_update's and kops' --validation-timeout); the old one still
    works, with a deprecation naming the version and the collection."""
    spec = module("kops_cluster").argument_spec()
    result = ArgumentSpecValidator(spec).validate({"name": "c1.k8s.local", "validate_timeout": "5m"})
    assert result.errors.errors == [] and result.validated_parameters["validation_timeout"] == "5m"
    assert [(d["version"], d["collection_name"]) for d in result._deprecations] == [("1.0.0", "kopsible.kops")]
    assert "validate_timeout" in result._deprecations[0]["msg"]
    assert module("rolling_update").argument_spec()["validation_timeout"]["type"] == spec["validation_timeout"]["type"] == "str"


def test_terraform_target_requires_out():
    checks = module("kops_cluster").ARGUMENT_CHECKS
    assert "target is terraform but all of the following are missing: out" in errors("kops_cluster", {"name": "c1.k8s.local", "target": "terraform"}, **checks)
    assert errors("kops_cluster", {"name": "c1.k8s.local", "target": "terraform", "out": "/tmp/tf"}, **checks) == ""


@pytest.mark.parametrize("value", [[0], 5, [{"http_tokens": "required"}], "notkv"])
def test_a_dict_option_of_the_wrong_type_fails_cleanly(capsys, value):
    """ansible-core would crash (TypeError) validating the suboptions of a list given for a dict option (the bad-input
    matrix's ``instance_metadata: [0]``): it fails naming the option instead."""
    spec = module("kops_instancegroup").argument_spec()
    with patch_module_args({"cluster": "c1.k8s.local", "name": "nodes", "instance_metadata": value}):
        with pytest.raises(SystemExit):
            kops_common.KopsModule(argument_spec=spec, supports_check_mode=True)
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and "instance_metadata" in result["msg"] and "Traceback" not in result["msg"], result


def test_a_key_value_string_is_a_patch_too(capsys):
    spec = module("kops_instancegroup").argument_spec()
    with patch_module_args({"cluster": "c1.k8s.local", "name": "nodes", "instance_metadata": "http_tokens=required"}):
        params = kops_common.KopsModule(argument_spec=spec, supports_check_mode=True).params
    assert params["instance_metadata"] == {"http_tokens": "required"}


def test_an_empty_external_load_balancer_entry_is_accepted_as_kops_accepts_it():
    """kops' validateExternalLoadBalancer (pkg/apis/kops/validation/instancegroup.go:488-531) checks only the fields
    given, and the model attaches nothing for an entry with neither (pkg/model/awsmodel/autoscalinggroup.go:515-540):
    never stricter than kops, so ``[{}]`` passes the argument spec and the rules."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops import ig as kops_ig
    from ansible_collections.kopsible.kops.plugins.modules import kops_instancegroup

    spec = kops_instancegroup.argument_spec()
    result = ArgumentSpecValidator(spec).validate({"cluster": "c1.k8s.local", "name": "nodes", "external_load_balancers": [{}]})
    assert result.error_messages == []
    assert kops_ig.check_load_balancers([{}]) is None
    with pytest.raises(kops_ig.RuleError, match=r"external_load_balancers\[0\].load_balancer_name: .* at most 32"):
        kops_ig.check_load_balancers([{"load_balancer_name": "l" * 33}])


def failure(capsys, given, name="kops_instancegroup"):
    """The JSON failure of KopsModule given ``given`` against module ``name``'s argument spec."""
    with patch_module_args(given):
        with pytest.raises(SystemExit):
            kops_common.KopsModule(argument_spec=module(name).argument_spec(), supports_check_mode=True)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "given, message",
    [
        # ansible-core's own wording, as AnsibleModule gives it when it checks the suboptions itself
        (
            {"instance_metadata": {"tokens": "required"}},
            # the module's name is kopsible.kops.kops_instancegroup when Ansible runs it (test_kops_instancegroup)
            " module: instance_metadata.tokens. Supported parameters include: http_put_response_hop_limit, http_tokens.",
        ),
        ({"root_volume": {"size": "x"}}, "argument 'size' is of type str found in 'root_volume'"),
        ({"additional_user_data": [{"name": "a.sh", "content": "x"}]}, "missing required arguments: type found in additional_user_data"),
        ({"mixed_instances_policy": {"instance_requirements": {"cpu": {"min": 1, "mx": 2}}}}, "mixed_instances_policy.instance_requirements.cpu.mx"),
    ],
)
def test_a_refused_suboption_fails_with_ansible_cores_message(capsys, given, message):
    """The suboptions are checked after AnsibleModule (KopsModule.check_suboptions) by ansible-core's own validator: the
    messages are those AnsibleModule gives, naming the option and the key."""
    result = failure(capsys, dict({"cluster": "c1.k8s.local", "name": "nodes"}, **given))
    assert result["failed"] is True and message in result["msg"], result["msg"]
    assert result["msg"].startswith("Unsupported parameters for (") == ("Supported parameters" in message or ".mx" in message)


def test_nested_and_list_suboptions_stay_patches(capsys):
    """A nested dict and the dicts of a list keep only the keys given; ``null`` given deep down stays ``null``; a
    nested dict given as "k=v" text is read as ansible-core reads it."""
    spec = module("kops_instancegroup").argument_spec()
    given = {
        "cluster": "c1.k8s.local",
        "name": "nodes",
        "mixed_instances_policy": {"instance_requirements": {"cpu": {"min": None}, "memory": "max=8Gi"}},
        "additional_user_data": [{"name": "a.sh", "type": "text/x-shellscript", "content": "x"}],
    }
    with patch_module_args(given):
        params = kops_common.KopsModule(argument_spec=spec, supports_check_mode=True).params
    assert params["mixed_instances_policy"] == {"instance_requirements": {"cpu": {"min": None}, "memory": {"max": "8Gi"}}}
    assert params["additional_user_data"] == given["additional_user_data"]
    assert capsys.readouterr().out == ""


def python_files(*parts):
    base = os.path.join(ROOT, *parts)
    return [os.path.join(d, f) for d, _dirs, files in os.walk(base) for f in files if f.endswith(".py")]


def test_no_plugin_uses_a_private_ansible_core_name():
    """Issue 27: the collection's code imports and reads no underscore name of ansible-core (``ansible.*``), e.g.
    ``basic._load_params``; amazon.aws' and the collection's own private modules are fine."""
    import ast

    found = []
    for path in python_files("plugins"):
        tree = ast.parse(open(path).read(), path)
        core_aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ansible":
                found += ["%s: from %s import %s" % (path, node.module, a.name) for a in node.names if a.name.startswith("_")]
                found += ["%s: from %s" % (path, node.module) for part in node.module.split(".") if part.startswith("_")]
                core_aliases.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                core_aliases.update(a.asname or a.name for a in node.names if a.name.split(".")[0] == "ansible")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in core_aliases and node.attr.startswith("_"):
                found.append("%s: %s.%s" % (path, node.value.id, node.attr))
    assert found == []


def test_no_module_utils_file_over_400_lines():
    """Issue 27: the helpers stay split by topic."""
    long = [(p, n) for p in python_files("plugins", "module_utils") for n in [sum(1 for _ in open(p))] if n > 400]
    assert long == []
