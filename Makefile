# kopsible — one-command set-up. `make demo` runs the lifecycle on the local AWS emulator;
# `make test` runs every test. Both install what is missing (venv, Python packages, kops, the Kubernetes
# control-plane binaries, bind9).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
COLLECTION_LINK := .cache/collections/ansible_collections/kopsible/kops
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.cache/collections
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/.cache/bin:$(PATH)

.PHONY: all setup venv collection kops kube sysdeps demo sandbox sandbox-stop rehearse test check test-unit test-integration molecule bench lint format clean

all: test

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

venv: $(VENV)/.installed

collection:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@ln -sfn $(CURDIR) $(COLLECTION_LINK)

kops:
	@scripts/ensure_kops.sh >/dev/null

# The real Kubernetes control plane of the local world (kube-apiserver, kube-controller-manager,
# kube-scheduler v1.35.4, etcd v3.6.16), built from their Go modules; reused when already built.
kube:
	@scripts/ensure_kube.sh

sysdeps:
	@scripts/ensure_system_deps.sh

setup: venv collection kops kube sysdeps

# DEMO_DNS: the loopback address of the emulator's DNS face (port 53); the demo refuses an occupied one.
DEMO_DNS ?= 127.0.0.1

demo: setup
	$(PY) scripts/demo.py --dns-address $(DEMO_DNS)

# The local world in the background for one's own playbooks (docs/getting-started.md): writes sandbox.env and
# sandbox-vars.yml, logs under .cache/sandbox/. Refuses an occupied DNS address or port, naming the holder.
SANDBOX_PARENT_ZONE ?= example.org
SANDBOX_DNS ?= 127.0.0.1
SANDBOX_PORT ?= 5000
# enforced: IAM user kops with the kOps guide's policies, every other key refused (as on AWS); open: any credentials.
SANDBOX_IAM ?= enforced

sandbox: setup
	$(PY) scripts/sandbox.py start --parent-zone $(SANDBOX_PARENT_ZONE) --dns-address $(SANDBOX_DNS) --port $(SANDBOX_PORT) --iam $(SANDBOX_IAM)

sandbox-stop:
	$(PY) scripts/sandbox.py stop

# A change rehearsed on a cluster's twin in the running sandbox (docs/rehearsal.md): reads the source only.
CLUSTER ?=
SOURCE_STORE ?=
PLAYBOOK ?=
SOURCE_PROFILE ?=
KUBECONFIG_LIVE ?=
REHEARSE_ARGS ?=

rehearse: setup
	$(PY) scripts/rehearse.py --cluster "$(CLUSTER)" --source-store "$(SOURCE_STORE)" --playbook "$(PLAYBOOK)" \
	  $(if $(SOURCE_PROFILE),--source-profile "$(SOURCE_PROFILE)") $(if $(KUBECONFIG_LIVE),--kubeconfig "$(KUBECONFIG_LIVE)") $(REHEARSE_ARGS)

# Tests run on TEST_WORKERS pytest-xdist workers, a test file per worker at a time (each worker has its
# own emulator and its own DNS address on port 53: tests/conftest.py). Three on this 2-core machine: with two, a
# fifth of the CPU stood idle while the long rolls wait on drains, joins and validation (a full run at 13e4d87:
# 2182 s with 2 workers, 20 % idle; 1955 s with 3, 5-9 % idle; issue 28). `make check` (CPU-bound unit tests) keeps 2.
TEST_WORKERS ?= 3
CHECK_WORKERS ?= 2

test: setup
	@mkdir -p out
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests --junitxml=out/test-results.xml; status=$$?; \
	  $(PY) tools/test_times.py out/test-results.xml; exit $$status

# The inner loop: ruff and the unit tests (argument specs, docs, rules, parsers), without root, kops or the emulator;
# ansible-lint and ansible-test sanity stay in `make test` and `make lint`.
check: venv collection
	$(VENV)/bin/ruff check --output-format concise .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q -n $(CHECK_WORKERS) --dist loadfile tests/unit --deselect tests/unit/test_lint.py::test_ansible_lint_production_profile_has_no_finding \
	  --deselect tests/unit/test_lint.py::test_ansible_test_sanity_passes_on_the_built_collection

# A Molecule scenario per role (extensions/molecule/<role>) on the local emulator, with the real kops for the kops
# roles; make test runs them too (tests/integration/test_molecule*.py).
molecule: venv collection kops
	molecule test --all

test-unit: venv collection
	$(PY) -m pytest tests/unit

test-integration: setup
	$(PY) -m pytest tests/integration

# ansible-lint, ansible-test sanity and ruff (pyproject.toml); `make format` applies ruff's formatting and safe fixes.
lint: venv collection
	$(PY) -m pytest tests/unit/test_lint.py

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# Benchmarks (not part of `make test`): writes docs/benchmarks.md and out/bench.json. --with-dns adds the
# lifecycle with Route53 delegation (binds 127.0.0.1:53, as the tests do); BENCH_ARGS adds or overrides options.
bench: setup
	$(PY) -m pip install -q -r bench/requirements.txt
	$(PY) bench/run.py --with-dns $(BENCH_ARGS)

clean:
	rm -rf .cache/collections .pytest_cache out
