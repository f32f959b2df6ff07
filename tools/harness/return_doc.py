"""Results of kopsible modules against their RETURN documentation (issue 17 item 4).

Every playbook the harness runs (:func:`harness.playbook.run_playbook`) passes each successful result of a
``kopsible.kops.*`` module through :func:`undocumented_keys`: a key the module returned that its RETURN does not
document fails the test that ran it, so every integration test enforces the documentation. Nested keys are
checked where RETURN documents them (``contains``), for dicts and for each dict of a list.

The reverse (every documented key appears in some real result) is checked on a recording: with
``KOPSIBLE_RETURN_RECORD=DIR`` in the environment, the documented key paths each successful result holds are appended
to ``DIR/<pid>.jsonl``; tools/return_coverage.py merges a recorded run into tests/unit/fixtures/recorded/return-keys-observed.json
and tests/unit/test_return_docs.py compares it with every module's RETURN.
"""

import ast
import functools
import json
import os

import yaml

from .emulator import ROOT

# What ansible-core (not the module) puts in a task result, and the loop keys of a looped task.
ANSIBLE_KEYS = frozenset(
    (
        "action",
        "changed",
        "failed",
        "msg",
        "invocation",
        "warnings",
        "deprecations",
        "diff",
        "exception",
        "skipped",
        "skip_reason",
        "false_condition",
        "ansible_facts",
        "attempts",
        "retries",
        "censored",
        "item",
        "ansible_loop_var",
        "ansible_index_var",
        "changed_when_result",
        "failed_when_result",
    )
)
COLLECTION = "kopsible.kops."


@functools.lru_cache(maxsize=None)
def return_doc(module):
    """The RETURN documentation of ``module`` (short name) as a dict, read from plugins/modules/<module>.py without
    importing it."""
    path = os.path.join(ROOT, "plugins", "modules", module + ".py")
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["RETURN"]:
            return yaml.safe_load(node.value.value) or {}
    raise KeyError("%s has no RETURN" % path)


def undocumented_keys(doc, value, path=""):
    """Dotted paths (``a.b``, ``a[].b`` for list items) of the keys in ``value`` (dict) that ``doc`` (RETURN, or a
    ``contains``) does not document; keys documented without ``contains`` are not looked into."""
    found = []
    for key, item in value.items():
        if key not in doc:
            found.append(path + key)
            continue
        contains = (doc[key] or {}).get("contains")
        if not contains:
            continue
        if isinstance(item, dict):
            found += undocumented_keys(contains, item, path + key + ".")
        elif isinstance(item, list):
            for element in item:
                if isinstance(element, dict):
                    found += undocumented_keys(contains, element, path + key + "[].")
    return sorted(set(found))


def documented_paths(doc, prefix=""):
    """Every key path RETURN (or a ``contains``) documents (set of str): ``a``, ``a.b`` under a dict, ``a[].b`` under
    a list (RETURN's ``type: list``)."""
    paths = set()
    for key, spec in (doc or {}).items():
        spec = spec or {}
        paths.add(prefix + key)
        if spec.get("contains"):
            paths |= documented_paths(spec["contains"], prefix + key + ("[]." if spec.get("type") == "list" else "."))
    return paths


def observed_paths(doc, value, prefix=""):
    """The documented key paths (as :func:`documented_paths` names them) that ``value`` (a result dict) holds."""
    paths = set()
    for key, item in value.items():
        if key not in doc:
            continue
        paths.add(prefix + key)
        contains = (doc[key] or {}).get("contains")
        if not contains:
            continue
        if isinstance(item, dict):
            paths |= observed_paths(contains, item, prefix + key + ".")
        elif isinstance(item, list):
            for element in item:
                if isinstance(element, dict):
                    paths |= observed_paths(contains, element, prefix + key + "[].")
    return paths


def record(module, doc, keys):
    """Append the documented paths ``keys`` holds to ``$KOPSIBLE_RETURN_RECORD/<pid>.jsonl`` when that is set."""
    folder = os.environ.get("KOPSIBLE_RETURN_RECORD")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "%d.jsonl" % os.getpid()), "a") as handle:
        handle.write(json.dumps({"module": module, "paths": sorted(observed_paths(doc, keys))}) + "\n")


def result_problems(action, result):
    """Why ``result`` (one task's result dict) of the task's ``action`` breaks its module's RETURN (list of str; empty
    when it does not, or the action is not a kopsible module). Only results that succeeded are checked: RETURN
    documents what a module returns, a failure's shape (``msg``, ``written``...) is the same for every module."""
    if not action or not action.startswith(COLLECTION):
        return []
    if isinstance(result.get("results"), list) and "invocation" not in result:  # a loop: one result per item
        return [p for item in result["results"] if isinstance(item, dict) for p in result_problems(action, item)]
    # a failure that failed_when turned into success keeps its failure shape (ansible-core 2.19 marks it so)
    if result.get("failed") or result.get("skipped") or "failed_when_suppressed_exception" in result:
        return []
    module = action[len(COLLECTION) :]
    keys = dict((k, v) for k, v in result.items() if k not in ANSIBLE_KEYS and not k.startswith("_ansible"))
    record(module, return_doc(module), keys)
    return ["%s returned %s, not in its RETURN" % (module, key) for key in undocumented_keys(return_doc(module), keys)]
