"""Issue 16 item 13: ansible.cfg's result format is the setting ansible-core 2.19 reads ([defaults]
callback_result_format, as `ansible-config list` names it), and a playbook run from the checkout prints YAML results."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
ENV.pop("ANSIBLE_CALLBACK_RESULT_FORMAT", None)


def test_the_default_callback_reads_yaml_from_ansible_cfg():
    out = subprocess.run(
        [os.path.join(BIN, "ansible-config"), "dump", "--only-changed", "-t", "callback"], cwd=ROOT, env=ENV, capture_output=True, text=True, check=True
    ).stdout
    section = out.split("default:", 1)[1].split("\n\n", 1)[0]
    assert "result_format(%s) = yaml" % os.path.join(ROOT, "ansible.cfg") in section, out


def test_a_playbook_prints_yaml(tmp_path):
    playbook = tmp_path / "p.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug: {msg: {zone: k8s.example.com, records: [NS, SOA]}}\n"
    )
    out = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        cwd=ROOT,
        env=dict(ENV, ANSIBLE_PYTHON_INTERPRETER=sys.executable),
        capture_output=True,
        text=True,
    ).stdout
    assert "    msg:\n        records:\n        - NS\n        - SOA\n        zone: k8s.example.com" in out, out


def test_pipelining_is_read_from_ansible_cfg():
    """[connection] pipelining = True is the setting ansible-core reads (ANSIBLE_PIPELINING), from this file."""
    env = dict(ENV)
    env.pop("ANSIBLE_PIPELINING", None)
    out = subprocess.run([os.path.join(BIN, "ansible-config"), "dump", "--only-changed"], cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert "ANSIBLE_PIPELINING(%s) = True" % os.path.join(ROOT, "ansible.cfg") in out, out
