"""The kopsible.kops.kops inventory plugin through real `ansible-inventory --list` / `ansible-playbook` runs,
reading real kops-format state stores in the emulator's S3.

The stores are written by the real kops binary (one gossip cluster, `kops create cluster` without
`--yes`) and cloned under other names with boto3 (tools/harness/store_factory.py); `kops get
clusters` reads the clones back, so the plugin is tested on what kops itself accepts.
"""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kopsible.kops.plugins.module_utils._state_store import reader, summary
from conftest import CLUSTER
from harness import store_factory
from harness.playbook import ansible_env

BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def template(emulator_session, ssh_public_key):
    """The objects of one cluster written by the real kops (see store_factory.seed_template)."""
    emulator_session.reset()
    return store_factory.seed_template(emulator_session, ssh_public_key)


def unwrap(value):
    """ansible-inventory marks inventory strings as unsafe (``{"__ansible_unsafe": s}``): plain values."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


class Inventory:
    """One ``ansible-inventory --list`` run: ``rc``, ``stderr``, ``hostvars`` ({host: vars}), ``groups``
    ({group: sorted hosts, children's hosts included})."""

    def __init__(self, proc):
        self.rc, self.stderr = proc.returncode, proc.stderr
        self.hostvars, self.groups = {}, {}
        if proc.returncode == 0:
            data = unwrap(json.loads(proc.stdout))
            self.hostvars = data.get("_meta", {}).get("hostvars", {})
            self.groups = {name: sorted(self._hosts(data, name)) for name in data if name != "_meta"}

    def _hosts(self, data, name):
        group = data.get(name, {})
        hosts = set(group.get("hosts", []))
        for child in group.get("children", []):
            hosts |= self._hosts(data, child)
        return hosts

    @property
    def hosts(self):
        return sorted(self.hostvars)


def write_config(tmp_path, config, name="fleet.kops.yml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(dict({"plugin": "kopsible.kops.kops"}, **config)))
    return str(path)


def inventory(emulator, path, args=(), env=None, use_emulator_env=True):
    """Run ``ansible-inventory -i PATH --list`` with the emulator's AWS environment; returns Inventory."""
    run_env = ansible_env(emulator if use_emulator_env else None, env)
    proc = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", path, "--list"] + list(args), capture_output=True, text=True, env=run_env, timeout=300)
    return Inventory(proc)


def test_empty_store_gives_no_hosts(emulator, tmp_path):
    store_factory.ensure_bucket(emulator, "kopsible-empty")
    inv = inventory(emulator, write_config(tmp_path, {"state_stores": ["s3://kopsible-empty"]}))
    assert inv.rc == 0, inv.stderr
    assert inv.hosts == []
    assert not [g for g in inv.groups if g.startswith(("region_", "k8s_"))]
    assert "Unable to parse" not in inv.stderr


def test_one_cluster_written_by_kops(emulator, tmp_path, ssh_public_key):
    """A store written by kops itself (no cloning), with the plugin pointed at the emulator through its
    own options (no AWS_* environment); every value agrees with `kops get cluster/ig -o json`."""
    store = "s3://kopsible-one/prefix"
    store_factory.seed_template(emulator, ssh_public_key, store=store, name="solo.k8s.local")
    creds = emulator.aws_env()
    config = {
        "state_stores": [store + "/"],
        "endpoint_url": emulator.url,
        "region": "us-east-1",
        "access_key": creds["AWS_ACCESS_KEY_ID"],
        "secret_key": creds["AWS_SECRET_ACCESS_KEY"],
    }
    env = {k: "" for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    inv = inventory(emulator, write_config(tmp_path, config), env=env, use_emulator_env=False)
    assert inv.rc == 0, inv.stderr
    assert inv.hosts == ["solo.k8s.local"]
    host = inv.hostvars["solo.k8s.local"]

    cluster = json.loads(store_factory.run_kops(emulator, store, ["get", "cluster", "solo.k8s.local", "-o", "json"]).stdout)
    groups = json.loads(store_factory.run_kops(emulator, store, ["get", "ig", "--name", "solo.k8s.local", "-o", "json"]).stdout)
    assert host["cluster_name"] == cluster["metadata"]["name"] == "solo.k8s.local"
    assert host["state_store"] == store
    assert host["config_base"] == cluster["spec"]["configBase"] == store + "/solo.k8s.local"
    assert host["kubernetes_version"] == cluster["spec"]["kubernetesVersion"] == "1.34.1"
    assert host["kubernetes_minor"] == "1.34"
    assert host["cloud_labels"] == cluster["spec"]["cloudLabels"] == {"environment": "dev", "team": "platform"}
    assert host["zones"] == sorted(s["zone"] for s in cluster["spec"]["subnets"]) == ["us-east-1a", "us-east-1b"]
    assert host["control_plane_zones"] == ["us-east-1a"]
    assert host["region"] == "us-east-1"
    assert host["topology"] == "public" and host["dns_type"] == "None" and host["dns_zone"] is None
    assert host["networking"] == "cilium" and host["cloud_provider"] == "aws"
    assert host["ansible_connection"] == "local"
    assert host["subnets"] == [{"name": s["name"], "zone": s["zone"], "type": s["type"], "cidr": s["cidr"]} for s in cluster["spec"]["subnets"]]
    assert [s["type"] for s in host["subnets"]] == ["Public", "Public"]
    # kops' subnet of each group is its zone here (kops create cluster names subnets after zones)
    expected = sorted(
        (
            g["metadata"]["name"],
            g["spec"]["role"],
            g["spec"]["minSize"],
            g["spec"]["maxSize"],
            g["spec"]["machineType"],
            g["spec"]["subnets"],
            sorted({s["zone"] for s in cluster["spec"]["subnets"] if s["name"] in g["spec"]["subnets"]}),
            g["spec"]["image"],
        )
        for g in groups
    )
    got = sorted((g["name"], g["role"], g["min_size"], g["max_size"], g["machine_type"], g["subnets"], g["zones"], g["image"]) for g in host["instance_groups"])
    assert got == expected
    assert len(got) == 3 and {g[1] for g in got} == {"Master", "Node"}
    nodes = [g["spec"] for g in groups if g["spec"]["role"] == "Node"]
    assert (host["node_count_min"], host["node_count_max"]) == (sum(n["minSize"] for n in nodes), sum(n["maxSize"] for n in nodes)) == (2, 2)
    # kops create cluster only stores the spec; kops writes kops-version.txt when it applies (pkg/model/config.go)
    assert host["kops_version_applied"] is None
    # a hash per stored object (the groups read from kops above) and the applied kops version
    assert sorted(host["spec_fingerprint"]) == sorted(["config", "kops-version.txt"] + ["instancegroup/" + g["metadata"]["name"] for g in groups])
    assert host["spec_fingerprint"]["kops-version.txt"] is None and all(len(v) == 16 for k, v in host["spec_fingerprint"].items() if k != "kops-version.txt")
    # every variable the plugin sets was checked above against kops' own JSON (a new one must be added here)
    checked = {"cluster_name", "state_store", "config_base", "kubernetes_version", "kubernetes_minor", "cloud_labels", "zones"}
    checked |= {"control_plane_zones", "region", "topology", "dns_type", "dns_zone", "networking", "cloud_provider", "subnets"}
    checked |= {"instance_groups", "node_count_min", "node_count_max", "ansible_connection", "ansible_python_interpreter"}
    checked |= {"kops_version_applied", "spec_fingerprint"}
    assert set(host) == checked, set(host) ^ checked
    assert inv.groups["region_us_east_1"] == ["solo.k8s.local"]
    assert inv.groups["k8s_1_34"] == ["solo.k8s.local"]

    # The same reader for modules: one cluster by name, None for a name that is not there.
    record = reader.read_cluster(emulator.client("s3"), store, "solo.k8s.local")
    assert record["cluster"]["spec"] == cluster["spec"] and record["name"] == "solo.k8s.local"
    assert sorted(g["metadata"]["name"] for g in record["instance_groups"]) == sorted(g["metadata"]["name"] for g in groups)
    assert summary.summarize_cluster(record) == {k: v for k, v in host.items() if not k.startswith("ansible_")}
    assert reader.read_cluster(emulator.client("s3"), store, "absent.k8s.local") is None


def test_25_clusters_vars_and_groups(emulator, tmp_path, template):
    store = "s3://kopsible-fleet/clusters"
    plan = store_factory.build_store(emulator, template, store, 25)
    config = {
        "state_stores": [store],
        "keyed_groups": [{"key": "cloud_labels.environment", "prefix": "env"}, {"key": "cloud_labels.team", "prefix": "", "separator": ""}],
        "groups": {"production": "cloud_labels.environment == 'prod'"},
        "compose": {"kops_state_store": "state_store", "node_groups": "instance_groups | map(attribute='name') | list"},
    }
    inv = inventory(emulator, write_config(tmp_path, config))
    assert inv.rc == 0, inv.stderr
    assert inv.hosts == sorted(plan) and len(inv.hosts) == 25

    # kops itself lists the same clusters from the cloned store
    listed = json.loads(store_factory.run_kops(emulator, store, ["get", "clusters", "-o", "json"]).stdout)
    assert sorted(c["metadata"]["name"] for c in listed) == inv.hosts

    for name, variant in plan.items():
        host = inv.hostvars[name]
        region = variant["region"]
        assert host["cluster_name"] == name
        assert host["state_store"] == store and host["kops_state_store"] == store
        assert host["config_base"] == "%s/%s" % (store, name)
        assert host["kubernetes_version"] == variant["kubernetes_version"]
        assert host["region"] == region
        assert host["zones"] == [region + "a", region + "b"]
        assert host["control_plane_zones"] == [region + "a"]
        assert host["cloud_labels"] == variant["cloud_labels"]
        assert host["node_groups"] == ["control-plane-%sa" % region, "nodes-%sa" % region, "nodes-%sb" % region]
        assert [(g["role"], g["zones"]) for g in host["instance_groups"]] == [("Master", [region + "a"]), ("Node", [region + "a"]), ("Node", [region + "b"])]

    def members(key):
        return {value: sorted(n for n, v in plan.items() if key(v) == value) for value in {key(v) for v in plan.values()}}

    for region, names in members(lambda v: v["region"]).items():
        assert inv.groups["region_" + region.replace("-", "_")] == names
    for version, names in members(lambda v: v["kubernetes_version"]).items():
        assert inv.groups["k8s_" + "_".join(version.split(".")[:2])] == names
    for environment, names in members(lambda v: v["cloud_labels"]["environment"]).items():
        assert inv.groups["env_" + environment] == names
    for team, names in members(lambda v: v["cloud_labels"]["team"]).items():
        assert inv.groups[team.replace("-", "_")] == names
    assert inv.groups["production"] == members(lambda v: v["cloud_labels"]["environment"])["prod"]
    assert sorted(g for g in inv.groups if g.startswith("region_")) == ["region_ap_southeast_2", "region_eu_west_1", "region_us_east_1"]
    assert sorted(g for g in inv.groups if g.startswith("k8s_")) == ["k8s_1_33", "k8s_1_34", "k8s_1_35"]
    assert len(inv.groups["region_us_east_1"]) == 9 and len(inv.groups["env_dev"]) == 5


def test_several_stores_and_folders_that_are_not_clusters(emulator, tmp_path, template):
    store_factory.build_store(emulator, template, "s3://kopsible-a", 2)
    store_factory.build_store(emulator, template, "s3://kopsible-b/eu/prod", 3, names=lambda i: "eu%d.k8s.local" % i)
    s3 = emulator.client("s3")
    # kops lists a cluster only where a config object is: other first-level folders are not clusters
    s3.put_object(Bucket="kopsible-a", Key="backups/etcd-main.tar", Body=b"x")
    s3.put_object(Bucket="kopsible-a", Key="README", Body=b"x")
    inv = inventory(emulator, write_config(tmp_path, {"state_stores": ["s3://kopsible-a", "s3://kopsible-b/eu/prod/"]}))
    assert inv.rc == 0, inv.stderr
    assert inv.hosts == ["c0.k8s.local", "c1.k8s.local", "eu0.k8s.local", "eu1.k8s.local", "eu2.k8s.local"]
    assert inv.hostvars["c1.k8s.local"]["state_store"] == "s3://kopsible-a"
    assert inv.hostvars["eu2.k8s.local"]["state_store"] == "s3://kopsible-b/eu/prod"
    assert inv.hostvars["eu2.k8s.local"]["config_base"] == "s3://kopsible-b/eu/prod/eu2.k8s.local"


def test_missing_bucket_is_a_clear_error(emulator, tmp_path, template):
    store_factory.build_store(emulator, template, "s3://kopsible-present", 1)
    path = write_config(tmp_path, {"state_stores": ["s3://kopsible-present", "s3://kopsible-missing/fleet"]})
    inv = inventory(emulator, path, env={"ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"})
    assert inv.rc != 0
    assert "state store s3://kopsible-missing/fleet: bucket kopsible-missing does not exist" in inv.stderr
    assert "Traceback" not in inv.stderr
    # By default Ansible warns and goes on without the source; the warning carries the same words.
    inv = inventory(emulator, path)
    assert inv.hosts == []
    assert "bucket kopsible-missing does not exist" in inv.stderr


def test_bad_options_name_the_option(emulator, tmp_path):
    inv = inventory(emulator, write_config(tmp_path, {"state_stores": ["gs://elsewhere"]}), env={"ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"})
    assert inv.rc != 0 and "state_stores: state store gs://elsewhere: must be an s3://BUCKET[/PREFIX] URL" in inv.stderr
    store_factory.ensure_bucket(emulator, "kopsible-w")
    inv = inventory(
        emulator, write_config(tmp_path, {"state_stores": ["s3://kopsible-w"], "max_workers": 0}), env={"ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"}
    )
    assert inv.rc != 0 and "max_workers: must be 1 or more, got 0" in inv.stderr


def test_cache_serves_the_second_run(emulator, tmp_path, template):
    """With cache on, the second run lists the same clusters after the store is gone; --flush-cache
    reads S3 again and finds the store missing."""
    plan = store_factory.build_store(emulator, template, "s3://kopsible-cached", 3)
    cache_dir = tmp_path / "cache"
    path = write_config(
        tmp_path,
        {
            "state_stores": ["s3://kopsible-cached"],
            "cache": True,
            "cache_plugin": "ansible.builtin.jsonfile",
            "cache_connection": str(cache_dir),
            "cache_timeout": 3600,
        },
    )
    first = inventory(emulator, path)
    assert first.rc == 0, first.stderr
    assert first.hosts == sorted(plan)
    assert len(os.listdir(cache_dir)) == 1

    assert store_factory.empty_bucket(emulator, "kopsible-cached") == 3 * len(template["objects"])
    emulator.client("s3").delete_bucket(Bucket="kopsible-cached")
    second = inventory(emulator, path)
    assert second.rc == 0, second.stderr
    assert second.hosts == first.hosts
    assert second.hostvars == first.hostvars
    assert second.groups == first.groups

    flushed = inventory(emulator, path, args=["--flush-cache"], env={"ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"})
    assert flushed.rc != 0
    assert "bucket kopsible-cached does not exist" in flushed.stderr


def test_playbook_runs_per_cluster_on_the_controller(emulator, tmp_path, template):
    """Hosts are usable as they are: a play on a keyed group runs locally, in Ansible's own Python
    (ansible_python_interpreter), and reads the cluster's objects from its state store with amazon.aws."""
    plan = store_factory.build_store(emulator, template, "s3://kopsible-play", 6)
    path = write_config(tmp_path, {"state_stores": ["s3://kopsible-play"], "keyed_groups": [{"key": "cloud_labels.environment", "prefix": "env"}]})
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "env_prod:env_staging",
                    "gather_facts": False,
                    "tasks": [
                        {"name": "python", "ansible.builtin.setup": {"gather_subset": ["!all", "!min", "python"]}},
                        {
                            "name": "igs",
                            "amazon.aws.s3_object_info": {
                                "bucket_name": "kopsible-play",
                                "prefix": "{{ cluster_name }}/instancegroup/",
                                "endpoint_url": emulator.url,
                            },
                            "register": "keys",
                        },
                        {
                            "name": "record",
                            "ansible.builtin.copy": {
                                "dest": str(tmp_path) + "/{{ inventory_hostname }}.json",
                                "content": "{{ {'python': ansible_facts.python.executable, 'region': region, 'keys': keys.s3_keys} | to_json }}",
                            },
                        },
                    ],
                }
            ]
        )
    )
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", path, str(playbook)], capture_output=True, text=True, env=ansible_env(emulator), timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    chosen = sorted(n for n, v in plan.items() if v["cloud_labels"]["environment"] in ("prod", "staging"))
    assert chosen == ["c1.k8s.local", "c2.k8s.local"]
    for name in chosen:
        seen = json.loads((tmp_path / (name + ".json")).read_text())
        # the venv the tests run in (its bin folder, resolved: a checkout may link .venv from elsewhere)
        assert os.path.realpath(os.path.dirname(seen["python"])) == os.path.realpath(os.path.dirname(sys.executable))
        assert seen["region"] == plan[name]["region"]
        region = plan[name]["region"]
        assert sorted(seen["keys"]) == ["%s/instancegroup/%s" % (name, ig) for ig in ("control-plane-%sa" % region, "nodes-%sa" % region, "nodes-%sb" % region)]
    assert not (tmp_path / "c0.k8s.local.json").exists()


def test_an_applied_clusters_host_agrees_with_kops_and_with_aws(applied_cluster, tmp_path):
    """Issue 29 item 13: the host of a cluster kops applied (the guide's HA cluster) against what the plugin does not
    compute from: kops' own ``get cluster``/``get ig -o json``, and the Auto Scaling groups and launch templates kops
    made in AWS (found by kops' tag ``kops.k8s.io/instancegroup``): each group's sizes, zones and machine type, the
    cluster's zones and region."""
    emulator = applied_cluster.emulator
    store = applied_cluster.kops["state_store"]
    inv = inventory(emulator, write_config(tmp_path, {"state_stores": [store]}))
    assert inv.rc == 0, inv.stderr
    assert inv.hosts == [CLUSTER]
    host = inv.hostvars[CLUSTER]

    cluster = json.loads(store_factory.run_kops(emulator, store, ["get", "cluster", CLUSTER, "-o", "json"]).stdout)
    listed = store_factory.run_kops(emulator, store, ["get", "ig", "--name", CLUSTER, "-o", "json"]).stdout
    groups = {g["metadata"]["name"]: g["spec"] for g in json.loads(listed)}
    assert host["kubernetes_version"] == cluster["spec"]["kubernetesVersion"] and host["dns_zone"] == cluster["spec"]["dnsZone"]
    assert sorted(g["name"] for g in host["instance_groups"]) == sorted(groups)

    autoscaling, ec2 = emulator.client("autoscaling"), emulator.client("ec2")
    zone_of_subnet = {s["SubnetId"]: s["AvailabilityZone"] for s in ec2.describe_subnets()["Subnets"]}
    asgs = {}
    for asg in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]:
        tags = {t["Key"]: t["Value"] for t in asg.get("Tags", [])}
        if tags.get("KubernetesCluster") == CLUSTER:
            asgs[tags["kops.k8s.io/instancegroup"]] = asg
    assert sorted(asgs) == sorted(groups), "one Auto Scaling group per InstanceGroup in AWS"
    for group in host["instance_groups"]:
        asg = asgs[group["name"]]
        assert (group["min_size"], group["max_size"]) == (asg["MinSize"], asg["MaxSize"]), group["name"]
        assert group["zones"] == sorted({zone_of_subnet[s] for s in asg["VPCZoneIdentifier"].split(",")}), group["name"]
        template = asg["LaunchTemplate"]
        versions = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"], Versions=[template["Version"]])
        [version] = versions["LaunchTemplateVersions"]
        assert group["machine_type"] == version["LaunchTemplateData"]["InstanceType"], group["name"]
    in_aws = {zone_of_subnet[s] for a in asgs.values() for s in a["VPCZoneIdentifier"].split(",")}
    assert host["zones"] == sorted(in_aws) and {z[:-1] for z in in_aws} == {host["region"]}
    control_plane = [a for name, a in asgs.items() if groups[name]["role"] in ("Master", "ControlPlane")]
    assert host["control_plane_zones"] == sorted({zone_of_subnet[s] for a in control_plane for s in a["VPCZoneIdentifier"].split(",")})
