"""playbooks/awx_content.yml (issue 31, AWX content as code) checked without a controller: an AWX or Automation
Controller cannot run here (it needs a Kubernetes operator or containers with PostgreSQL and Redis; podman here cannot
run containers: docs/awx.md section 1), so each awx.awx task's arguments are checked against that module's own
documented argument spec (``ansible-doc --json``, which awx.awx's sanity tests keep equal to the spec): every key an
option or alias, literal values of the option's type and choices, required options given, nested suboptions
likewise. The references between the objects are checked too: the playbooks and the inventory file exist, the
workflow's nodes name job templates the playbook makes, and the credential type injects only variables the collection
reads."""

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(ROOT, "playbooks", "awx_content.yml")
TYPES = {"str": str, "bool": bool, "int": int, "dict": dict, "list": list, "path": str}


class Loader(yaml.SafeLoader):
    """PyYAML with Ansible's ``!unsafe`` tag (a string never templated)."""


Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def tasks():
    with open(PLAYBOOK) as handle:
        plays = yaml.load(handle, Loader=Loader)
    return [(task["name"], module, args, plays[0]["vars"]) for task in plays[0]["tasks"] for module, args in task.items() if module.startswith("awx.awx.")]


def module_docs(modules):
    ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    out = subprocess.run([ansible_doc, "--json"] + sorted(modules), capture_output=True, text=True, check=True).stdout
    return {name: entry["doc"]["options"] for name, entry in json.loads(out).items()}


def templated(value):
    return isinstance(value, str) and "{{" in value


def problems(args, options, path):
    """What in ``args`` (a task's arguments, or a suboption's value) breaks ``options`` (documented options)."""
    found = []
    names = {alias: name for name, option in options.items() for alias in [name] + list(option.get("aliases") or [])}
    for key, value in args.items():
        if key not in names:
            found.append("%s%s: not an option" % (path, key))
            continue
        option = options[names[key]]
        where = path + key
        if templated(value):
            continue
        kind = TYPES.get(option.get("type", "str"))
        if kind is not None and not isinstance(value, kind):
            found.append("%s: %r is not a %s" % (where, value, option.get("type")))
            continue
        if option.get("choices") and value not in option["choices"]:
            found.append("%s: %r is not one of %s" % (where, value, option["choices"]))
        subs = option.get("suboptions")
        if subs and isinstance(value, dict):
            found += problems(value, subs, where + ".")
        elif subs and isinstance(value, list):
            for index, element in enumerate(value):
                found += problems(element, subs, "%s[%d]." % (where, index)) if isinstance(element, dict) else ["%s[%d]: not a dict" % (where, index)]
    for name, option in options.items():
        if option.get("required") and not ({name} | set(option.get("aliases") or [])) & set(args):
            found.append("%s%s: required, not given" % (path, name))
    return found


def test_every_awx_task_matches_its_modules_argument_spec():
    found = tasks()
    docs = module_docs({module for _name, module, _args, _vars in found})
    assert {m for _n, m, _a, _v in found} >= {
        "awx.awx.execution_environment",
        "awx.awx.credential_type",
        "awx.awx.project",
        "awx.awx.inventory_source",
        "awx.awx.job_template",
        "awx.awx.workflow_job_template",
    }
    wrong = [p for name, module, args, _vars in found for p in problems(args, docs[module], "%s (%s): " % (name, module))]
    assert wrong == []
    # the checker itself refuses what the controller's modules refuse
    kinds = docs["awx.awx.credential_type"]["kind"]["choices"]
    assert problems({"name": "x", "kind": "galaxy"}, docs["awx.awx.credential_type"], "") == ["kind: 'galaxy' is not one of %s" % kinds]
    assert problems({"nmae": "x"}, docs["awx.awx.project"], "") == ["nmae: not an option", "name: required, not given"]


def test_the_objects_refer_to_each_other_and_to_the_repository():
    found = {module: (args, variables) for _name, module, args, variables in tasks()}
    variables = found["awx.awx.job_template"][1]
    templates = {t["name"]: t for t in variables["awx_job_templates"]}
    for template in templates.values():
        assert os.path.isfile(os.path.join(ROOT, template["playbook"])), template
        assert template["inventory"] in ("localhost", "clusters") and template.get("job_type", "run") in ("run", "check")
    assert templates["kops: fleet update run - check"]["job_type"] == "check"
    assert templates["kops: fleet update run - check"]["playbook"] == templates["kops: fleet update run"]["playbook"] == "playbooks/fleet_update_run.yml"
    nodes = found["awx.awx.workflow_job_template"][0]["workflow_nodes"]
    assert [n["identifier"] for n in nodes] == ["plan", "approve", "run"]
    assert [n["unified_job_template"]["type"] for n in nodes] == ["job_template", "workflow_approval", "job_template"]
    assert {n["unified_job_template"]["name"] for n in nodes if n["unified_job_template"]["type"] == "job_template"} <= set(templates)
    assert [[s["identifier"] for s in n.get("related", {}).get("success_nodes", [])] for n in nodes] == [["approve"], ["run"], []]
    source = found["awx.awx.inventory_source"][0]
    assert source["source"] == "scm" and os.path.isfile(os.path.join(ROOT, source["source_path"])) and source["source_path"].endswith("kops.yml")
    with open(os.path.join(ROOT, source["source_path"])) as handle:
        assert yaml.safe_load(handle)["plugin"] == "kopsible.kops.kops"
    # the credential type injects what the collection reads: the state store and kops' settings (modules, inventory
    # plugin), and the S3 keys kops signs a custom endpoint's requests with (the runner passes them on)
    injected = found["awx.awx.credential_type"][0]["injectors"]["env"]
    assert found["awx.awx.credential"][0]["credential_type"] == found["awx.awx.credential_type"][0]["name"]
    sources = ""
    for folder, _dirs, files in os.walk(os.path.join(ROOT, "plugins")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name)) as handle:
                    sources += handle.read()
    assert [variable for variable in injected if '"%s"' % variable not in sources] == []
