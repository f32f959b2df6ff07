"""A collection module's real ``main()`` run inside the test process, with the arguments Ansible would hand it.

For tests that try many inputs whose answer is decided before anything leaves the module (the bad-input matrix):
the argument spec, the rules and ``fail_json`` are the same code an ``ansible-playbook`` run executes, without the
1-3 s of a controller and a module process per input. The wiring (module_defaults, the action group, the
controller's own checks) stays proven by the runs those tests keep going through ``ansible-playbook``.

The arguments reach ``AnsibleModule`` through ansible-core's own test hook
(``ansible.module_utils.testing.patch_module_args``); the result is what the module printed (its JSON), or, when
``main()`` raised, a result with ``failed``, ``msg`` ``Module failed: ...`` and the traceback, as ansible-core
reports a module that crashed.
"""

import contextlib
import importlib
import io
import json
import traceback

INTERNAL = {
    "_ansible_check_mode": False,
    "_ansible_diff": False,
    "_ansible_no_log": False,
    "_ansible_debug": False,
    "_ansible_verbosity": 0,
    "_ansible_keep_remote_files": False,
}


def _reset_warnings():
    """ansible-core keeps a module's warnings and deprecations in module globals; a new run starts without them."""
    from ansible.module_utils.common import warnings

    warnings._global_warnings.clear()
    warnings._global_deprecations.clear()


def run_module(name, args, check_mode=False, diff=False):
    """Run ``kopsible.kops.<name>``'s ``main()`` with ``args`` (dict, module_defaults already merged); returns its
    result (dict)."""
    from ansible.module_utils.testing import patch_module_args

    module = importlib.import_module("ansible_collections.kopsible.kops.plugins.modules." + name)
    params = dict(args, **INTERNAL)
    params.update(_ansible_check_mode=check_mode, _ansible_diff=diff, _ansible_module_name="kopsible.kops." + name)
    out = io.StringIO()
    _reset_warnings()
    try:
        with patch_module_args(params), contextlib.redirect_stdout(out):
            module.main()
    except SystemExit:
        pass
    except Exception as exc:  # an uncaught exception: what ansible-core shows as "Module failed"
        return {"failed": True, "msg": "Module failed: %s" % exc, "module_stderr": traceback.format_exc()}
    text = out.getvalue()
    try:
        result = json.loads(text[text.index("{") :])
    except ValueError:
        return {"failed": True, "msg": "MODULE FAILURE: no JSON result", "module_stdout": text}
    if "Unsupported parameters" in (result.get("msg") or "") and "_ansible_" in result["msg"].split("Supported parameters")[0]:
        raise AssertionError("in_process: ansible-core refused an internal argument this harness set: %s" % result["msg"][:300])
    return result


def play_defaults(emulator, module, kops=None):
    """The arguments a harness play (harness.playbook.run_playbook) gives the kopsible ``module`` (its short name)
    through module_defaults (dict): the emulator's endpoint, region and credentials, and for the kops modules
    (harness.playbook.KOPS_MODULES) ``kops``, the kops options (``kops_binary``, ``kops_env``, ...)."""
    from .playbook import KOPS_MODULES

    env = emulator.aws_env()
    args = {"endpoint_url": emulator.url, "region": "us-east-1", "access_key": env["AWS_ACCESS_KEY_ID"], "secret_key": env["AWS_SECRET_ACCESS_KEY"]}
    if module in KOPS_MODULES:
        args.update(kops or {})
    return args


def run_task(task, emulator, kops=None, check_mode=False):
    """Run one harness task dict (``{"name": ..., "kopsible.kops.<module>": options, ...}``) in process, with the
    arguments its play's module_defaults would add (:func:`play_defaults`); returns the module's result (dict)."""
    [(action, options)] = [(k, v) for k, v in task.items() if k.startswith("kopsible.kops.")]
    module = action.rsplit(".", 1)[1]
    return run_module(module, dict(play_defaults(emulator, module, kops), **options), check_mode=check_mode)


def run_sampled(tasks, emulator, kops=None, every=6):
    """Run harness task dicts (each with a unique ``name``) for their results, ``{name: result}``: every
    ``every``-th task (the first included) through ONE ``ansible-playbook`` run (harness.playbook.run_playbook, with
    ``ignore_errors`` so that each runs), the others in process (:func:`run_task`). For many inputs that fail before
    anything leaves the module; the sampled playbook keeps the wiring (module_defaults, the controller) proven and
    its output is checked for tracebacks by the caller (``run`` of the returned pair: ``(results, run)``)."""
    from .playbook import run_playbook

    sampled = [dict(task, ignore_errors=True) for index, task in enumerate(tasks) if index % every == 0]
    run = run_playbook(sampled, emulator=emulator, kops=kops)
    results = {task["name"]: run.result(task["name"]) for task in sampled}
    for index, task in enumerate(tasks):
        if index % every:
            results[task["name"]] = run_task(task, emulator, kops=kops)
    return results, run
