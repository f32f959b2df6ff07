#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: kops_toolbox_dump
short_description: Save a diagnostics dump of a kOps cluster (kops toolbox dump), secrets redacted
version_added: 0.2.0
description:
  - Writes one file with what kops users are asked for when something fails, C(kops toolbox dump) without C(--dir)
    (the cluster's cloud resources, no SSH to any node), the cluster spec and InstanceGroups from the state store and,
    with O(kubeconfig), every object the cluster's Kubernetes API lists.
  - The Kubernetes objects are the ones kops' own C(--k8s-resources) dump writes (every resource with the C(list)
    verb, in the server's preferred version of each group, less C(componentstatuses), C(podtemplates),
    C(replicationcontrollers) and C(controllerrevisions); C(metadata.managedFields) left out). kops reads them only
    with C(--dir), which also needs an SSH key and connects to every node; this module reads them through the
    kubernetes client instead. Pod logs are not read (they come from the kubelets).
  - >-
    Secrets are redacted, where kops writes them as they are. The values of every Secret's C(data) and
    C(stringData) and its C(kubectl.kubernetes.io/last-applied-configuration) annotation, every PEM private key block
    anywhere in the file, and the run's AWS credentials are replaced by C(<redacted: N bytes>); RV(redacted) lists
    where. The Secrets' names, types and keys stay.
  - Takes what it can. A part that cannot be read (the Kubernetes API down, kops failing) is named in RV(errors) and a
    warning, and the rest is still written; the run fails only when the cluster is not in the state store or the file
    cannot be written.
  - The roles M(kopsible.kops.cluster) and M(kopsible.kops.upgrade) run it when one of their steps fails
    (C(cluster_diagnostics) and C(upgrade_diagnostics)).
author:
  - kopsible maintainers (!UNKNOWN)
options:
  name:
    description: Name of the cluster, as kops stores it.
    type: str
    required: true
  dest:
    description:
      - Path of the file to write. When it is an existing directory or ends in C(/), the file
        C(<name>-<UTC time YYYYmmddTHHMMSSZ>.<format>) is made in it (the directory is created when missing).
      - The file is replaced when it exists; it is written with O(mode) and is never world-readable by default.
    type: path
    required: true
  format:
    description: The file's format, as kops' C(-o).
    type: str
    choices: [yaml, json]
    default: yaml
  reason:
    description: Why the dump is taken (e.g. the failed task and its message); written at the top of the file.
    type: str
  cloud_resources:
    description: Include the cloud resources of C(kops toolbox dump) (kops' C(--cloud-resources)).
    type: bool
    default: true
  k8s_resources:
    description: With O(kubeconfig), include the Kubernetes objects (kops' C(--k8s-resources)).
    type: bool
    default: true
  kubeconfig:
    description:
      - A kubeconfig for the cluster's Kubernetes API. Its contents never appear in the dump or the result.
      - Without it the dump has no Kubernetes objects.
    type: path
  kube_context:
    description: Context of O(kubeconfig) to use; default the context named after the cluster (as C(kops export kubecfg) names it), else the current context.
    type: str
  mode:
    description: Permissions of the file, as M(ansible.builtin.file) takes them.
    type: raw
    default: "0600"
  state_store:
    description: The kOps state store, e.g. C(s3://my-kops-state). Falls back to the E(KOPS_STATE_STORE) environment variable.
    type: str
  kops_binary:
    description: Path or command name of the kops binary (v1.36 is what this collection is tested with).
    type: str
    default: kops
  kops_env:
    description: Extra environment variables for kops, e.g. C(KOPS_FEATURE_FLAGS).
    type: dict
    default: {}
  kops_timeout:
    description: Seconds C(kops toolbox dump) may run before it is stopped.
    type: int
    default: 1800
  allowed_account_ids:
    description:
      - Refuse to run unless the AWS credentials belong to one of these 12-digit account ids (checked with STS
        GetCallerIdentity before anything is read), as the other modules of the collection do.
    type: list
    elements: str
  lock_timeout:
    description: Ignored (a dump takes no state-store lock); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: int
    default: 600
  break_lock:
    description: Ignored (a dump takes no state-store lock); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: bool
    default: false
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
requirements:
  - kops (the binary; C(kops toolbox dump))
  - kubernetes (Python client), only with O(kubeconfig)
notes:
  - Reads only. C(changed) is true when the file was written, which every run that is not in check mode does (the
    objects' states and the time differ between two dumps). Check mode reads everything, writes no file and reports
    the path it would write.
  - The dump holds the cluster's addresses, names and object specs; keep it as you would keep the cluster's
    configuration.
"""

EXAMPLES = r"""
- name: Diagnostics of a cluster for a bug report
  kopsible.kops.kops_toolbox_dump:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://example-kops-state
    kubeconfig: ~/.kube/mycluster01
    dest: ./diagnostics/
  register: dump

- name: A step of one's own, with a dump when it fails
  block:
    - name: Validate
      kopsible.kops.kops_cluster:
        name: mycluster01.kopsclustertest.example.org
        kubeconfig: ~/.kube/mycluster01
        validate: true
  rescue:
    - name: Dump
      kopsible.kops.kops_toolbox_dump:
        name: mycluster01.kopsclustertest.example.org
        kubeconfig: ~/.kube/mycluster01
        dest: ./diagnostics/
        reason: "{{ ansible_failed_task.name }}: {{ ansible_failed_result.msg }}"
      register: dump
    - name: Fail, naming the dump
      ansible.builtin.fail:
        msg: "{{ ansible_failed_result.msg }} (diagnostics: {{ dump.dump_file }})"
"""

RETURN = r"""
dump_file:
  description: Absolute path of the file written (in check mode, the one that would be).
  returned: always
  type: str
  sample: /home/me/diagnostics/mycluster01.kopsclustertest.example.org-20261203T201500Z.yaml
written:
  description: Whether the file was written (false in check mode).
  returned: always
  type: bool
bytes:
  description: Size of the dump in bytes.
  returned: always
  type: int
cloud_resources:
  description: Number of cloud resources in kops' dump (its C(resources) list); null when not read.
  returned: always
  type: int
instances:
  description: The EC2 instances of kops' dump (its C(instances)), by name (instance id), with their roles.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: The instance id., returned: success, type: str}
    roles: {description: "Its roles, e.g. C([control-plane]).", returned: success, type: list, elements: str}
kubernetes_objects:
  description: "Objects dumped per resource, C({\"v1/nodes\": 5, \"apps/v1/deployments\": 3}); empty without O(kubeconfig)."
  returned: always
  type: dict
redacted:
  description: Where values were replaced, as paths in the dump, e.g. C(kubernetes.v1/secrets[0].data.tls.key).
  returned: always
  type: list
  elements: str
errors:
  description: The parts that could not be read, each naming what and why; the rest was still dumped.
  returned: always
  type: list
  elements: str
kops_invocations:
  description: The kops commands run, with exit code and seconds.
  returned: always
  type: list
  elements: dict
"""

import datetime
import json
import os
import re
import tempfile

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.kopsible.kops.plugins.module_utils._kops import diagnostics
from ansible_collections.kopsible.kops.plugins.module_utils._kops import info as kops_info
from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.output import yaml
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import checked, read_only_store
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import SECRET_ENV, KopsError, runner_from_module


def argument_spec():
    spec = kops_argument_spec()
    spec.update(
        name=dict(type="str", required=True),
        dest=dict(type="path", required=True),
        format=dict(type="str", choices=["yaml", "json"], default="yaml"),
        reason=dict(type="str"),
        cloud_resources=dict(type="bool", default=True),
        k8s_resources=dict(type="bool", default=True),
        kubeconfig=dict(type="path"),
        kube_context=dict(type="str"),
        mode=dict(type="raw", default="0600"),
    )
    return spec


def dump_path(dest, name, fmt, now):
    """The file a dump goes to: ``dest`` itself, or ``<name>-<now as YYYYmmddTHHMMSSZ>.<fmt>`` inside it when it is an
    existing directory or ends in ``/`` (absolute)."""
    if dest.endswith(os.sep) or os.path.isdir(dest):
        dest = os.path.join(dest, "%s-%s.%s" % (name, now.strftime("%Y%m%dT%H%M%SZ"), fmt))
    return os.path.abspath(dest)


# ansible.module_utils.basic AnsibleModule._symbolic_mode_to_octal: comma-separated [ugoa]*([-+=]([rwxXst]*|[ugo]))+
_SYMBOLIC_MODE = re.compile(r"[ugoa]*([-+=]([rwxXst]*|[ugo]))+(,[ugoa]*([-+=]([rwxXst]*|[ugo]))+)*")


def mode_problem(mode):
    """Why ``mode`` (the option, int or str) is not a file mode ansible-core takes (set_mode_if_different: an int,
    an octal string, or a symbolic mode; only permission bits, at most 0o7777), or None."""
    if isinstance(mode, bool) or not isinstance(mode, (int, str)):
        return 'mode: %r is not a file mode (octal such as "0600" or symbolic such as u=rw,go=)' % (mode,)
    if isinstance(mode, str) and not re.fullmatch(r"(0o)?[0-7]+", mode):  # int(mode, 8) takes the 0o prefix too
        if _SYMBOLIC_MODE.fullmatch(mode):
            return None
        return 'mode: %r is not a file mode (octal such as "0600" or symbolic such as u=rw,go=)' % (mode,)
    value = int(mode, 8) if isinstance(mode, str) else mode
    if not 0 <= value <= 0o7777:
        return "mode: %r has bits beyond the permissions (0 to 07777)" % (mode,)
    return None


def dest_problem(path):
    """Why the dump cannot be written to ``path`` (absolute, from :func:`dump_path`), or None: the nearest existing
    directory on its way must be writable and nothing on the way may be a file; an existing ``path`` must not be a
    directory."""
    if os.path.isdir(path):
        return "dest: %s is a directory" % path
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return "dest: %s is not a directory, so %s cannot be made" % (parent, path)
    if not os.access(parent, os.W_OK | os.X_OK):
        return "dest: the directory %s is not writable, so %s cannot be made" % (parent, path)
    return None


def cloud_dump(module, runner, name, errors):
    """kops' cloud dump of cluster ``name`` (``kops toolbox dump -o json``, a dict), or None with the failure in
    ``errors``."""
    try:
        out = runner.run(["toolbox", "dump", "--name", name, "-o", "json"]).stdout
        return json.loads(out or "{}")
    except KopsError as exc:
        errors.append("kops toolbox dump: %s" % exc.message)
    except ValueError as exc:
        errors.append("kops toolbox dump: its output is not JSON (%s)" % exc)
    return None


def kubernetes_dump(module, name, errors):
    """The Kubernetes objects of the cluster behind O(kubeconfig) (diagnostics.kubernetes_objects), or {} with the
    failure in ``errors``."""
    params = module.params
    k8s_client, k8s_config = kops_pdb.kubernetes_client()
    context = params["kube_context"] or kops_pdb.default_context(params["kubeconfig"], name)
    try:
        api = k8s_config.new_client_from_config(config_file=params["kubeconfig"], context=context)
    except Exception as exc:  # ConfigException, OSError, yaml errors: the dump goes on without the API
        errors.append("kubeconfig %s: %s" % (params["kubeconfig"], diagnostics.first_line(exc)))
        return {}

    def get(path):
        # the raw answer, parsed here: call_api's response-type argument changed name between client versions
        answer = api.call_api(
            path,
            "GET",
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
            _request_timeout=30,
        )
        return json.loads(answer.data)

    try:
        return diagnostics.kubernetes_objects(get, errors)
    except Exception as exc:  # urllib3 errors, ApiException: the API did not answer its discovery
        errors.append("the Kubernetes API (discovery): %s" % diagnostics.first_line(exc))
        return {}
    finally:
        api.close()


def write_file(module, path, text):
    """Write ``text`` to ``path`` atomically (a temporary file beside it, then renamed) with O(mode); the parent
    directory is made (0700) when missing. Fails the module naming the path."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=".kops-dump-", dir=os.path.dirname(path))
    except OSError as exc:
        module.fail_json(msg="dest: cannot write %s: %s" % (path, exc))
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        module.set_mode_if_different(tmp, module.params["mode"], False)
        os.replace(tmp, path)
    except OSError as exc:
        module.fail_json(msg="dest: cannot write %s: %s" % (path, exc))
    finally:  # also when fail_json exits: no temporary file is left
        if os.path.exists(tmp):
            os.unlink(tmp)


def check_params(module, now):
    """The cluster name and the dump file's path, after the option rules (nothing read or written yet)."""
    params = module.params
    name = checked(module, kops_rules.cluster_name, params["name"])
    if params["kubeconfig"] and params["k8s_resources"] and not kops_pdb.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    path = dump_path(params["dest"], name, params["format"], now)
    problem = mode_problem(params["mode"]) or dest_problem(path)
    if problem:
        module.fail_json(msg="%s; nothing was read or written" % problem)
    return name, path


def dump_text(module, runner, name, record, now, state_store, redacted, errors):
    """The dump file's text (YAML or JSON as ``format`` says): kops' cloud dump, the stored objects of ``record`` and
    the Kubernetes objects, redacted (the redacted paths appended to ``redacted``, what could not be read to
    ``errors``); returns ``(text, cloud, objects)``."""
    params = module.params
    cloud = cloud_dump(module, runner, name, errors) if params["cloud_resources"] else None
    objects = kubernetes_dump(module, name, errors) if params["kubeconfig"] and params["k8s_resources"] else {}
    document = {
        "dump": {"cluster": name, "time": now.isoformat(), "reason": params["reason"], "state_store": state_store, "errors": errors},
        "cluster": record["cluster"],
        "instance_groups": record["instance_groups"],
        "cloud": cloud,
        "kubernetes": objects,
    }
    document = diagnostics.redact(document, found=redacted, secrets=[runner.env.get(k) for k in SECRET_ENV])
    if params["format"] == "json":
        return json.dumps(document, indent=2, sort_keys=False, default=str) + "\n", cloud, objects
    return yaml.safe_dump(document, default_flow_style=False, sort_keys=False), cloud, objects


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    name, path = check_params(module, now)
    state_store = read_only_store(module, "kops_toolbox_dump")
    records = kops_info.read_records(module, state_store, [name])
    if not records:
        module.fail_json(msg="name: cluster %s is not in the state store %s; nothing was written" % (name, state_store))
    runner = runner_from_module(module, state_store)
    redacted, errors = [], []
    text, cloud, objects = dump_text(module, runner, name, records[0], now, state_store, redacted, errors)
    for error in errors:
        module.warn("kops_toolbox_dump of %s: %s (the rest was dumped)" % (name, error))
    existed = os.path.exists(path)
    if not module.check_mode:
        write_file(module, path, text)
    module.exit_json(changed=not module.check_mode, **dump_result(module, path, existed, text, cloud, objects, redacted, errors, runner))


def dump_result(module, path, existed, text, cloud, objects, redacted, errors, runner):
    """The module's result fields but ``changed`` (RETURN)."""
    extra = {"diff": {"before": {"path": path, "exists": existed}, "after": {"path": path, "exists": True, "bytes": len(text)}}} if module._diff else {}
    return dict(
        dump_file=path,
        written=not module.check_mode,
        bytes=len(text.encode("utf-8")),
        cloud_resources=len((cloud or {}).get("resources") or []) if cloud is not None else None,
        instances=[{"name": i.get("name"), "roles": i.get("roles") or []} for i in (cloud or {}).get("instances") or []],
        kubernetes_objects=diagnostics.object_counts(objects),
        redacted=redacted,
        errors=errors,
        kops_invocations=runner.calls,
        **extra,
    )


if __name__ == "__main__":
    main()
