# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
name: kops
short_description: kOps clusters in one or more S3 state stores as inventory hosts
version_added: 0.1.0
description:
  - Reads kOps state stores straight from S3 (no kops binary needed) and yields one host per cluster,
    named after the cluster, with C(ansible_connection=local). Tasks for a cluster run on the controller
    and reach AWS and kops from there, as the collection's modules expect.
  - A cluster is a first-level folder of the store that holds a C(config) object (the Cluster object);
    its InstanceGroups are the objects under C(instancegroup/). This is kops' own layout
    (k8s.io/kops C(pkg/client/simple/vfsclientset)); YAML is parsed with PyYAML.
  - All S3 reads run concurrently on a pool of O(max_workers) threads, one ListObjectsV2 per store
    (per 1000 clusters), and per cluster one GetObject of C(config), one of C(kops-version.txt), one ListObjectsV2 of
    C(instancegroup/) and one GetObject per InstanceGroup.
  - Host variables are C(cluster_name), C(state_store), C(config_base), C(cloud_provider),
    C(kubernetes_version), C(kubernetes_minor), C(region), C(zones) (the subnets' zones),
    C(control_plane_zones), C(subnets), C(topology) (C(public) or C(private)), C(dns_type), C(dns_zone),
    C(cloud_labels), C(networking), C(instance_groups) (each with C(name), C(role), C(min_size),
    C(max_size), C(machine_type), C(zones), C(subnets), C(image)), C(node_count_min), C(node_count_max),
    C(kops_version_applied) (the kops version that last applied the cluster, from its C(kops-version.txt); null when
    it was never applied), C(spec_fingerprint) (a short hash per stored object and the applied kops version; it
    changes when someone writes the spec);
    plus C(ansible_connection=local) and C(ansible_python_interpreter) set to C({{ ansible_playbook_python }}).
  - Groups made by the plugin itself are C(region_<region>) (e.g. C(region_us_east_1)) and
    C(k8s_<major>_<minor>) (e.g. C(k8s_1_34)). O(keyed_groups), O(groups) and O(compose) add more,
    for example one group per value of a cloud label.
  - A store that cannot be read (missing bucket, access denied, no connection, an object that is not
    YAML) fails the whole source with an error naming the store.
  - Uses a YAML configuration file whose name ends with C(kops.yml) or C(kops.yaml).
author:
  - kopsible maintainers (!UNKNOWN)
options:
  plugin:
    description: Marks the file as this plugin's configuration.
    required: true
    type: str
    choices: [kopsible.kops.kops]
  state_stores:
    description:
      - The kOps state stores to read, each C(s3://BUCKET) or C(s3://BUCKET/PREFIX), as given to
        C(kops --state). Duplicates are read once.
      - Falls back to E(KOPS_STATE_STORE) (a comma-separated list is accepted there too).
    type: list
    elements: str
    required: true
    env:
      - name: KOPS_STATE_STORE
  max_workers:
    description:
      - Number of S3 requests in flight at once (threads). Also the size of the client's connection pool.
    type: int
    default: 16
extends_documentation_fragment:
  - inventory_cache
  - constructed
  - amazon.aws.boto3
  - amazon.aws.common.plugins
  - amazon.aws.region.plugins
  - amazon.aws.assume_role.plugins
notes:
  - Without O(endpoint_url), boto3 also honours E(AWS_ENDPOINT_URL) / E(AWS_ENDPOINT_URL_S3), which is
    how the collection's tests point the plugin at a local AWS emulator.
  - The S3 client is created in O(region) (default C(us-east-1)); boto3 follows S3's redirects to a
    bucket in another region.
  - A cluster name found in two stores becomes one host; the first store listed wins and a warning names both.
  - Without O(session_token), E(AWS_SESSION_TOKEN) and O(profile), an STS token in E(AWS_SECURITY_TOKEN) is used
    (the variable AWX's Amazon Web Services credential type sets).
"""

EXAMPLES = r"""
# inventory/clusters.kops.yml
plugin: kopsible.kops.kops
state_stores:
  - s3://example-kops-state
  - s3://example-kops-state-eu/prod
# one group per value of the cluster's "environment" cloud label: env_prod, env_dev, ...
keyed_groups:
  - key: cloud_labels.environment | default('none')
    prefix: env
  - key: topology
    prefix: topology
groups:
  highly_available: control_plane_zones | length >= 3
compose:
  kops_state_store: state_store
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/kopsible-inventory
cache_timeout: 600

# Through a role or an STS role in another account
# plugin: kopsible.kops.kops
# state_stores: [s3://fleet-kops-state]
# assume_role_arn: arn:aws:iam::123456789012:role/kops-inventory-reader

# ansible-inventory -i inventory/clusters.kops.yml --graph
# ansible-playbook -i inventory/clusters.kops.yml playbooks/upgrade_cluster.yml --limit 'env_dev:&k8s_1_34'
"""

import re

from ansible.errors import AnsibleParserError

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core < 2.19 templates inventory strings as they are

    def trust_as_template(value):
        return value


from ansible_collections.amazon.aws.plugins.plugin_utils.inventory import AWSInventoryBase

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import security_token_fallback
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.reader import read_stores
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import retry_config
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import summarize_cluster
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError, normalize_store_url

DEFAULT_REGION = "us-east-1"


def _group_name(prefix, value):
    """``prefix_value`` with every character outside ``[A-Za-z0-9_]`` turned into ``_`` (str)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", "%s_%s" % (prefix, value))


class InventoryModule(AWSInventoryBase):
    """One host per kOps cluster found in the configured S3 state stores."""

    NAME = "kopsible.kops.kops"
    INVENTORY_FILE_SUFFIXES = ("kops.yml", "kops.yaml")

    def _do_fail(self, message):
        raise AnsibleParserError(message)

    def _stores(self):
        """The configured stores, normalised (list of str). Raises AnsibleParserError on a bad URL."""
        stores = self.get_option("state_stores") or []
        if isinstance(stores, str):
            stores = stores.split(",")
        stores = [s.strip() for s in stores if s and s.strip()]
        if not stores:
            raise AnsibleParserError("state_stores: give at least one s3://BUCKET[/PREFIX] (or set KOPS_STATE_STORE)")
        try:
            return [normalize_store_url(s) for s in stores]
        except StoreError as exc:
            raise AnsibleParserError("state_stores: %s" % exc) from exc

    def _s3_client(self, workers):
        """A boto3 S3 client shared by the reader threads (pool as large as the thread pool)."""
        return self.client("s3", region=self.region or DEFAULT_REGION, config=retry_config(max_pool_connections=workers))

    def _fetch(self, stores):
        """Host variables of every cluster in ``stores`` (list of dict), read from S3."""
        workers = self.get_option("max_workers")
        if workers < 1:
            raise AnsibleParserError("max_workers: must be 1 or more, got %d" % workers)
        try:
            records = read_stores(self._s3_client(workers), stores, max_workers=workers)
        except StoreError as exc:
            raise AnsibleParserError(str(exc)) from exc
        return [summarize_cluster(record) for record in records]

    def _populate(self, clusters):
        """Add one host per cluster with its variables, the plugin's groups and the constructed ones."""
        strict = self.get_option("strict")
        seen = {}
        for variables in clusters:
            host = variables["cluster_name"]
            if host in seen:
                self.warn("cluster %s is in %s and in %s; keeping %s" % (host, seen[host], variables["state_store"], seen[host]))
                continue
            seen[host] = variables["state_store"]
            self.inventory.add_host(host)
            # Modules for a cluster run on the controller, in the Python that runs Ansible (which has boto3),
            # not in whatever interpreter discovery would find for a local host.
            hostvars = dict(variables, ansible_connection="local", ansible_python_interpreter=trust_as_template("{{ ansible_playbook_python }}"))
            for key, value in hostvars.items():
                self.inventory.set_variable(host, key, value)
            if variables.get("region"):
                self.inventory.add_child(self.inventory.add_group(_group_name("region", variables["region"])), host)
            if variables.get("kubernetes_minor"):
                self.inventory.add_child(self.inventory.add_group(_group_name("k8s", variables["kubernetes_minor"])), host)
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host, strict=strict)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache=cache)
        token = security_token_fallback({"session_token": self.get_option("session_token"), "profile": self.get_option("profile")})
        if token:  # AWX's AWS credential injects AWS_SECURITY_TOKEN (kops_common.security_token_fallback)
            self.set_option("session_token", token)
        stores = self._stores()
        cached, clusters = self.get_cached_result(path, cache)
        if not cached:
            clusters = self._fetch(stores)
        self._populate(clusters)
        self.update_cached_result(path, cache, clusters)
