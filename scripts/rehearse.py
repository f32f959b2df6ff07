#!/usr/bin/env python3
"""`make rehearse`: rehearse a change to an existing kOps cluster on its twin in the local world, before touching it.

    scripts/rehearse.py --cluster NAME --source-store s3://BUCKET[/PREFIX] --playbook CHANGE.yml
        [--source-profile P | --source-endpoint URL] [--source-region R]
        [--kubeconfig LIVE-KUBECONFIG [--context C]] [-e KEY=VALUE | -e @FILE]...
        [--twin-vars sandbox-vars.yml] [--report out/rehearsal-NAME.json]

1. Reads the cluster from the source's state store (read only: tools/rehearsal.ReadOnlyS3 refuses every call but
   reads; give it read-only credentials too) and, with ``--kubeconfig``, the live cluster's Nodes, Pods and
   PodDisruptionBudgets (read only). Stops, naming the field, when the spec uses what the local world cannot host.
2. Builds the twin in the running local world (`make sandbox`; its sandbox-vars.yml says where): the twin's buckets
   (``twin-`` + the source's), the DNS zone by name, the Cluster and InstanceGroup objects with ``kops create -f``,
   the source's SSH public key, ``kops update cluster --yes``; the live node count of each group; then the live
   budgets and the pods they select, on the twin's nodes of the same groups.
3. Runs the playbook against the twin (``hosts: localhost``), with the extra variables ``kopsible_defaults`` (the
   module_defaults of group/kopsible.kops.kops: the twin's endpoint, credentials, state store and kops settings),
   ``aws_defaults``, ``cluster_name`` and ``kubeconfig`` (the twin's admin kubeconfig), and reports: the cloud plan,
   the roll order per group, the budgets that block which (source) nodes, the expected roll time, what the change
   wrote to the twin's store said in the source's names, and the names mapped. Exit 0 when the playbook passed,
   3 when it failed on the twin (the report says where), 2 when the rehearsal itself could not run.

Development tooling beside the collection (galaxy.yml build_ignore), like scripts/sandbox.py.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

import rehearsal  # noqa: E402
import yaml  # noqa: E402

from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import kops_environment  # noqa: E402
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import reader  # noqa: E402
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import parse_store_url  # noqa: E402

DEFAULT_TWIN_VARS = os.path.join(ROOT, "sandbox-vars.yml")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", required=True, help="the cluster's name, as in the source's state store")
    parser.add_argument("--source-store", required=True, help="the source's state store, s3://BUCKET[/PREFIX]")
    parser.add_argument("--source-profile", help="AWS profile of the source's (read-only) credentials")
    parser.add_argument("--source-endpoint", help="S3 endpoint of the source (default: AWS)")
    parser.add_argument("--source-region", default=os.environ.get("AWS_REGION", "us-east-1"))
    parser.add_argument("--kubeconfig", help="a (read-only) kubeconfig of the live cluster: its budgets and their pods are imported")
    parser.add_argument("--context", help="the kubeconfig's context (default: its current one)")
    parser.add_argument("--playbook", required=True, help="the change, a playbook for hosts: localhost")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], help="KEY=VALUE or @FILE, for the playbook")
    parser.add_argument("--twin-vars", default=DEFAULT_TWIN_VARS, help="the local world's settings (default: make sandbox's sandbox-vars.yml)")
    parser.add_argument("--report", help="where the JSON report goes (default out/rehearsal-CLUSTER.json)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds the playbook may run")
    parser.add_argument("--source-bundle", help=argparse.SUPPRESS)  # what the first process read (main)
    args = parser.parse_args(argv)
    args.report = args.report or os.path.join(ROOT, "out", "rehearsal-%s.json" % args.cluster)
    return args


def source_s3(args):
    """The source's S3 client, read only (:class:`rehearsal.ReadOnlyS3`), from ``--source-profile`` or the
    environment's credentials (``REHEARSE_SOURCE_ACCESS_KEY_ID``/``_SECRET_ACCESS_KEY``/``_SESSION_TOKEN`` first)."""
    import boto3

    keys = dict(
        (name, os.environ.get("REHEARSE_SOURCE_" + env))
        for name, env in (("aws_access_key_id", "ACCESS_KEY_ID"), ("aws_secret_access_key", "SECRET_ACCESS_KEY"), ("aws_session_token", "SESSION_TOKEN"))
    )
    session = boto3.Session(profile_name=args.source_profile) if args.source_profile else boto3.Session(**dict((k, v) for k, v in keys.items() if v))
    return rehearsal.ReadOnlyS3(session.client("s3", region_name=args.source_region, endpoint_url=args.source_endpoint))


class Twin(object):
    """The local world the twin is built in, from its settings file (sandbox-vars.yml's shape: ``kopsible_defaults``
    with ``endpoint_url``, ``region``, ``access_key``, ``secret_key``, ``kops_binary``, ``kops_env``; ``kops_image``)."""

    def __init__(self, path, workdir):
        with open(path) as handle:
            self.vars = yaml.safe_load(handle) or {}
        self.defaults = dict(self.vars["kopsible_defaults"])
        self.image = self.vars.get("kops_image")
        self.workdir = workdir
        clean = dict((k, v) for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_", "KOPS_STATE_STORE", "KUBECONFIG")))
        d = self.defaults
        self.env = kops_environment(
            region=d.get("region"), endpoint_url=d.get("endpoint_url"), access_key=d.get("access_key"), secret_key=d.get("secret_key"), base=clean
        )
        self.env["AWS_DEFAULT_REGION"] = d.get("region") or "us-east-1"

    def client(self, service):
        import boto3

        d = self.defaults
        return boto3.client(
            service,
            region_name=d.get("region"),
            endpoint_url=d.get("endpoint_url"),
            aws_access_key_id=d.get("access_key"),
            aws_secret_access_key=d.get("secret_key"),
        )

    def kops(self, store, args, check=True):
        env = dict(self.env, KOPS_STATE_STORE=store, **(self.defaults.get("kops_env") or {}))
        proc = subprocess.run([self.defaults["kops_binary"]] + args, env=env, capture_output=True, text=True, timeout=900)
        if check and proc.returncode != 0:
            raise rehearsal.RehearsalError("twin: kops %s failed (%d): %s" % (" ".join(args[:3]), proc.returncode, proc.stderr.strip()[-2000:]))
        return proc

    def known_images(self, images):
        """The images of ``images`` the twin's EC2 knows (set of str: AMI ids, or owner/name as kops takes them)."""
        ec2, known = self.client("ec2"), set()
        for image in images:
            try:
                if image.startswith("ami-"):
                    found = ec2.describe_images(ImageIds=[image])["Images"]
                else:
                    found = ec2.describe_images(Filters=[{"Name": "name", "Values": [image.split("/", 1)[-1]]}])["Images"]
            except Exception:  # noqa: BLE001 - an unknown id is an error in EC2's API: not known
                found = []
            if found:
                known.add(image)
        return known

    def prepare(self, buckets, cluster, mapped):
        """The twin's buckets (versioned, as kops asks of a state store) and the cluster's DNS zone (by name)."""
        s3 = self.client("s3")
        for bucket in buckets:
            try:
                s3.head_bucket(Bucket=bucket)
            except Exception:  # noqa: BLE001 - absent: make it
                s3.create_bucket(Bucket=bucket)
                s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        zone = (cluster.get("spec") or {}).get("dnsZone")
        if zone and not cluster["metadata"]["name"].endswith(".k8s.local"):
            r53 = self.client("route53")
            name = zone.rstrip(".") + "."
            found = [z for z in r53.list_hosted_zones_by_name(DNSName=name)["HostedZones"] if z["Name"] == name]
            zone_id = found[0]["Id"] if found else r53.create_hosted_zone(Name=name, CallerReference="twin-%s-%d" % (zone, time.time()))["HostedZone"]["Id"]
            mapped.append({"field": "Cluster.spec.dnsZone (its hosted zone)", "source": zone, "twin": zone_id.split("/")[-1]})

    def build(self, store, cluster, groups, ssh_keys):
        """kops create -f (the Cluster, then its InstanceGroups), the SSH public key, kops update cluster --yes; an
        existing twin of the same name is deleted first. Returns the twin's admin kubeconfig path."""
        name = cluster["metadata"]["name"]
        if self.kops(store, ["get", "cluster", "--name", name], check=False).returncode == 0:
            print("rehearse: deleting the previous twin of %s" % name, flush=True)
            self.kops(store, ["delete", "cluster", "--name", name, "--yes"])
        manifest = os.path.join(self.workdir, "twin.yaml")
        with open(manifest, "w") as handle:
            yaml.safe_dump_all([cluster] + groups, handle)
        self.kops(store, ["create", "-f", manifest])
        key = os.path.join(self.workdir, "admin.pub")
        if not ssh_keys:
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key[: -len(".pub")]], check=True)
        else:
            with open(key, "w") as handle:
                handle.write(ssh_keys[0] + "\n")
        self.kops(store, ["create", "sshpublickey", "--name", name, "-i", key])
        self.kops(store, ["update", "cluster", "--name", name, "--yes"])
        kubeconfig = os.path.join(self.workdir, "twin.kubeconfig")
        self.kops(store, ["export", "kubecfg", "--name", name, "--admin", "--kubeconfig", kubeconfig])
        return kubeconfig

    def scale(self, name, groups, sizes):
        """Set each Auto Scaling group's desired capacity to the live node count (within its min and max)."""
        asg = self.client("autoscaling")
        for group in groups:
            ig = group["metadata"]["name"]
            spec = group.get("spec") or {}
            want = sizes.get(ig)
            if want is None or want == spec.get("minSize"):
                continue
            want = max(spec.get("minSize") or 0, min(spec.get("maxSize") or want, want))
            asg.set_desired_capacity(AutoScalingGroupName="%s.%s" % (ig, name), DesiredCapacity=want)

    def api(self, kubeconfig):
        import kubernetes

        return kubernetes.config.new_client_from_config(config_file=kubeconfig)

    def wait_nodes(self, kubeconfig, sizes, timeout=300):
        """Wait until the twin has ``sizes`` ({group: count}) Ready nodes; returns the Node objects (dicts)."""
        import kubernetes

        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                client = self.api(kubeconfig)
                nodes = [client.sanitize_for_serialization(n) for n in kubernetes.client.CoreV1Api(client).list_node().items]
                ready = [n for n in nodes if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or [])]
                last = rehearsal.group_sizes(ready)
                if all(last.get(g, 0) >= count for g, count in sizes.items()):
                    return nodes
            except Exception as exc:  # noqa: BLE001 - the API is still coming up
                last = str(exc)
            time.sleep(2)
        raise rehearsal.RehearsalError("twin: the nodes did not come up within %ds (want %s; last %s)" % (timeout, sizes, last))

    def budgets(self, kubeconfig):
        """The twin's own PodDisruptionBudgets (set of ``(namespace, name)``: kops' addons)."""
        import kubernetes

        found = kubernetes.client.PolicyV1Api(self.api(kubeconfig)).list_pod_disruption_budget_for_all_namespaces().items
        return {(b.metadata.namespace, b.metadata.name) for b in found}

    def import_workload(self, kubeconfig, budgets, pods, timeout=120):
        """Create the budgets' namespaces, the pods and the budgets in the twin; wait until each budget counts its pods."""
        import kubernetes

        client = self.api(kubeconfig)
        core, policy = kubernetes.client.CoreV1Api(client), kubernetes.client.PolicyV1Api(client)
        for namespace in sorted({o["metadata"]["namespace"] for o in budgets + pods}):
            try:
                core.create_namespace({"metadata": {"name": namespace}})
            except kubernetes.client.ApiException as exc:
                if exc.status != 409:
                    raise
        deadline = time.monotonic() + timeout
        for pod in pods:
            while True:
                try:
                    core.create_namespaced_pod(pod["metadata"]["namespace"], pod)
                    break
                except kubernetes.client.ApiException as exc:
                    # a new namespace's default ServiceAccount comes a moment later (kube-controller-manager)
                    if exc.status != 403 or "serviceaccount" not in (exc.body or "") or time.monotonic() > deadline:
                        raise
                    time.sleep(1)
        for budget in budgets:
            policy.create_namespaced_pod_disruption_budget(budget["metadata"]["namespace"], budget)
        for budget in budgets:
            ns, name = budget["metadata"]["namespace"], budget["metadata"]["name"]
            want = len(
                [p for p in pods if p["metadata"]["namespace"] == ns and rehearsal.selector_matches(budget["spec"].get("selector"), p["metadata"]["labels"])]
            )
            while True:
                status = policy.read_namespaced_pod_disruption_budget(name, ns).status
                if status and status.observed_generation and (status.current_healthy or 0) >= want:
                    break
                if time.monotonic() > deadline:
                    raise rehearsal.RehearsalError("twin: budget %s/%s did not count its %d pods within %ds" % (ns, name, want, timeout))
                time.sleep(1)

    def spec_objects(self, store, name):
        """The twin's stored Cluster and InstanceGroup objects, ``{'Cluster': obj, 'InstanceGroup NAME': obj}``."""
        record = reader.read_cluster(self.client("s3"), store, name)
        if record is None:
            return {}
        objects = {"Cluster": record["cluster"]}
        for group in record["instance_groups"]:
            objects["InstanceGroup %s" % group["metadata"]["name"]] = group
        return objects


def extra_vars(values):
    """The ``-e`` values as one dict (KEY=VALUE pairs, @FILE of YAML)."""
    merged = {}
    for value in values:
        if value.startswith("@"):
            with open(value[1:]) as handle:
                merged.update(yaml.safe_load(handle) or {})
        else:
            key, _, val = value.partition("=")
            merged[key] = val
    return merged


def read_source(args):
    """Everything the rehearsal reads from the source, before anything is written anywhere (dict, JSON-serializable):
    ``record`` (the Cluster and InstanceGroup objects), ``ssh_keys``, ``live`` (``nodes``, ``pods``, ``pdbs`` of the
    live cluster, empty lists without ``--kubeconfig``). Raises rehearsal.RehearsalError: a store that cannot be read,
    a cluster not in it, a spec the local world cannot host (:class:`rehearsal.Unhostable`)."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.pdb import read_cluster_objects

    source = source_s3(args)
    try:
        record = reader.read_cluster(source, args.source_store, args.cluster)
        if record is None:
            raise rehearsal.RehearsalError("source: cluster %s is not in the state store %s; nothing was written" % (args.cluster, args.source_store))
        problems = rehearsal.unhostable(record)
        if problems:
            raise rehearsal.Unhostable(problems)
        ssh_keys = reader.read_ssh_public_keys(source, record["cluster"]) or []
    except reader.StoreError as exc:
        raise rehearsal.RehearsalError("source: %s; nothing was written" % exc) from exc
    try:
        live = dict(zip(("nodes", "pods", "pdbs"), read_cluster_objects(args.kubeconfig, args.context) if args.kubeconfig else ([], [], [])))
    except Exception as exc:  # noqa: BLE001 - kubernetes' config and API errors alike: said, not a traceback
        raise rehearsal.RehearsalError(
            "source: the live cluster could not be read with --kubeconfig %s: %s; nothing was written" % (args.kubeconfig, exc)
        ) from exc
    print("rehearse: read %s from %s: %d InstanceGroup(s)%s" % (args.cluster, args.source_store, len(record["instance_groups"]),
          ", %d node(s), %d budget(s) live" % (len(live["nodes"]), len(live["pdbs"])) if args.kubeconfig else ""), flush=True)  # fmt: skip
    return {"record": record, "ssh_keys": ssh_keys, "live": live}


def rehearse(args, source, started):
    """Build the twin from ``source`` (:func:`read_source`) and run the playbook on it; returns the report (dict).
    Raises rehearsal.RehearsalError."""
    from harness.playbook import run_playbook

    workdir = tempfile.mkdtemp(prefix="kopsible-rehearsal-")
    record, live = source["record"], source["live"]
    twin = Twin(args.twin_vars, workdir)
    images = {(g.get("spec") or {}).get("image") for g in record["instance_groups"]} - {None}
    cluster, groups, mapped, buckets = rehearsal.twin_objects(record, args.source_store, twin.known_images(images), twin.image)
    bucket, prefix = parse_store_url(args.source_store)
    store = "s3://%s/%s" % (rehearsal.twin_bucket(bucket), prefix.rstrip("/")) if prefix.strip("/") else "s3://" + rehearsal.twin_bucket(bucket)
    mapped.insert(0, {"field": "state store", "source": args.source_store, "twin": store})
    twin.prepare(buckets, cluster, mapped)
    kubeconfig = twin.build(store, cluster, groups, source["ssh_keys"])
    sizes = rehearsal.group_sizes(live["nodes"])
    for group in groups:
        sizes.setdefault(group["metadata"]["name"], (group.get("spec") or {}).get("minSize") or 0)
    twin.scale(args.cluster, groups, sizes)
    twin_nodes = twin.wait_nodes(kubeconfig, sizes)
    nodes_mapping = rehearsal.node_map(live["nodes"], twin_nodes)
    budgets, pods = rehearsal.pods_to_import(live["pdbs"], live["pods"], nodes_mapping, twin.budgets(kubeconfig))
    twin.import_workload(kubeconfig, budgets, pods)
    print("rehearse: the twin is up in %.0fs: %s; imported %d budget(s), %d pod(s)" % (time.monotonic() - started, store, len(budgets), len(pods)), flush=True)

    before = twin.spec_objects(store, args.cluster)
    variables = dict(
        twin.vars,
        kopsible_defaults=dict(twin.defaults, state_store=store),
        aws_defaults=twin.vars.get("aws_defaults") or dict((k, twin.defaults[k]) for k in ("endpoint_url", "region", "access_key", "secret_key")),
        cluster_name=args.cluster,
        kubeconfig=kubeconfig,
    )
    variables.update(extra_vars(args.extra_vars))
    env = dict(twin.env, KOPS_STATE_STORE=store, KUBECONFIG=kubeconfig)
    run = run_playbook(playbook=os.path.abspath(args.playbook), extra_vars=variables, env=env, progress=sys.stdout, timeout=args.timeout)
    after = twin.spec_objects(store, args.cluster)
    results = [{"task": name, "action": action, "result": result} for (name, result), action in zip(run.results, run.actions)]
    out = rehearsal.report(results, record, sizes, nodes_mapping, rehearsal.store_writes(before, after, mapped), mapped)
    if run.rc != 0 and out["failed"] is None:
        out["failed"] = {"task": None, "msg": (run.stderr or run.stdout)[-2000:]}
    out.update(cluster=args.cluster, source_store=args.source_store, twin_store=store, playbook=args.playbook, rc=run.rc,
               imported={"budgets": len(budgets), "pods": len(pods)}, seconds=round(time.monotonic() - started, 1))  # fmt: skip
    return out


def summary(out):
    """The report as lines a person reads (str)."""
    lines = [
        "rehearsal of %s (%s) with %s: %s"
        % (out["cluster"], out["source_store"], out["playbook"], "the change failed on the twin" if out["failed"] else "the change passed on the twin")
    ]
    if out["failed"]:
        lines.append("  failed at: %s: %s" % (out["failed"]["task"], out["failed"]["msg"]))
    lines.append("  cloud plan: %s" % ("; ".join(out["cloud_plan"]) or "nothing"))
    lines.append("  roll order: %s" % (", ".join("%s (%s, %d node(s))" % (g["name"], g["role"], g["nodes"]) for g in out["roll_order"]) or "nothing rolls"))
    for budget in out["blocking"]:
        lines.append("  blocked by budget %s: %s" % (budget["budget"], ", ".join(budget["pods"])))
    lines.append(
        "  expected roll time: %ss (%s)" % (out["expected_roll_total_seconds"], ", ".join("%s %ss" % kv for kv in out["expected_roll_seconds"].items()) or "-")
    )
    lines.append(
        "  would write to the source's store: %s"
        % ("; ".join("%s %s: %s -> %s" % (w["object"], w["path"], w["before"], w["after"]) for w in out["writes"]) or "nothing")
    )
    lines.append("  names mapped in the twin: %s" % "; ".join("%s: %s -> %s" % (m["field"], m["source"], m["twin"]) for m in out["mapped"]))
    return "\n".join(lines)


def main(argv=None):
    """Read the source (plain DNS: the source is AWS), then build and run the twin in a child process whose resolver is
    the local world's DNS face (tools/with-local-dns: the twin's API names exist only there), with the source's
    credentials left out of its environment. Returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    started = time.monotonic()
    if not os.path.isfile(args.twin_vars):
        print(
            "rehearse: the local world's settings %s are missing: start the local world with `make sandbox` (or give --twin-vars)" % args.twin_vars,
            file=sys.stderr,
        )
        return 2
    try:
        if args.source_bundle:
            with open(args.source_bundle) as handle:
                source = json.load(handle)
            os.unlink(args.source_bundle)
        else:
            source = read_source(args)
            with open(args.twin_vars) as handle:
                resolv = ((yaml.safe_load(handle) or {}).get("kopsible_defaults", {}).get("kops_env") or {}).get("KOPSIBLE_RESOLV_CONF")
            if resolv:
                fd, bundle = tempfile.mkstemp(prefix="kopsible-rehearsal-source-", suffix=".json")
                with os.fdopen(fd, "w") as handle:
                    json.dump(source, handle)
                env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("REHEARSE_SOURCE_", "AWS_")))
                env["KOPSIBLE_RESOLV_CONF"] = resolv
                child = [os.path.join(ROOT, "tools", "with-local-dns"), sys.executable, os.path.abspath(__file__), "--source-bundle", bundle] + argv
                return subprocess.call(child, env=env)
        out = rehearse(args, source, started)
    except rehearsal.RehearsalError as exc:
        print("rehearse: %s" % exc, file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - AWS's or the Kubernetes API's refusal while building the twin: said, not a traceback
        print("rehearse: twin: %s: %s; nothing was written to the source" % (type(exc).__name__, str(exc).strip()[-2000:]), file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
    with open(args.report, "w") as handle:
        json.dump(out, handle, indent=2, sort_keys=True, default=str)
    print(summary(out))
    print("rehearse: report %s" % args.report)
    return 3 if out["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
