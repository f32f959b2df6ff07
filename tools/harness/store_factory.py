"""Real kops-format state stores in the emulator's S3, many clusters at a time, without DNS.

One cluster is written by the real kops binary (:func:`seed_template`: ``kops create cluster`` with a
gossip name such as ``c0.k8s.local``, which needs no DNS server). Its objects (``config``,
``instancegroup/*``, ``pki/...``, ``clusteraddons/...``) are then copied under other names with
boto3 (:func:`build_store`), the cluster name, ``configBase``, region and zones rewritten, and
optionally the Kubernetes version and cloud labels changed, so that grouping can be tested. The
copies are valid kops objects: ``kops get clusters`` lists them (tests/integration/test_inventory.py).
"""

import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import yaml

from .kops_env import UBUNTU_AMI, artifact_mirror, kops_binary

SEED_NAME = "c0.k8s.local"
SEED_REGION = "us-east-1"
SEED_STORE = "s3://kopsible-seed-store"
VERSIONS = ("1.34.1", "1.35.0", "1.33.2")
REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-2")
ENVIRONMENTS = ("dev", "staging", "prod", "qa", "perf")


def kops_env(emulator, store):
    """Environment for the real kops against the emulator (dict): the collection's own
    ``kops_environment`` (S3_ENDPOINT etc.) plus the offline settings of docs/emulator.md."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import kops_environment

    return kops_environment(
        state_store=store, base=dict(os.environ, **emulator.aws_env()), extra={"KOPS_BASE_URL": artifact_mirror(), "KOPS_FEATURE_FLAGS": "-ImageDigest"}
    )


def run_kops(emulator, store, args, timeout=300, dns=None):
    """Run the real kops with ``args`` against ``store``; returns CompletedProcess. RuntimeError on failure. With
    ``dns`` (a :class:`harness.kops_env.KopsDNS`) kops resolves through the emulator's DNS face
    (tools/kops-with-local-dns), as the modules' kops does: ``kops update cluster`` looks up the zone's NS records."""
    env, binary = kops_env(emulator, store), kops_binary()
    if dns is not None:
        from .kops_env import module_options

        options = module_options(dns)
        env, binary = dict(env, **options["kops_env"]), options["kops_binary"]
    proc = subprocess.run([binary] + list(args), env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("kops %s failed (%d): %s" % (" ".join(args[:3]), proc.returncode, proc.stderr[-3000:]))
    return proc


def instance_group_manifest(cluster, name, spec, **metadata):
    """A v1alpha2 InstanceGroup manifest (dict) of ``cluster`` for ``kops create -f``, with ``spec`` and any more
    ``metadata`` (e.g. ``annotations``)."""
    meta = dict({"name": name, "labels": {"kops.k8s.io/cluster": cluster}}, **metadata)
    return {"apiVersion": "kops.k8s.io/v1alpha2", "kind": "InstanceGroup", "metadata": meta, "spec": spec}


def _split(store):
    rest = store[len("s3://") :].strip("/")
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix + "/" if prefix else ""


def ensure_bucket(emulator, bucket):
    """Create ``bucket`` in the emulator unless it exists."""
    s3 = emulator.client("s3")
    if bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=bucket)


def seed_template(emulator, ssh_public_key, store=SEED_STORE, name=SEED_NAME):
    """Create ``name`` with the real kops (no ``--yes``: the state store only) and return its objects.

    2 zones in us-east-1 (a, b), one control-plane group in us-east-1a, Kubernetes 1.34.1, cloud
    labels ``environment=dev,team=platform``. Returns a template dict
    ``{'store', 'name', 'region', 'objects': {key relative to the cluster folder: bytes}}``.
    """
    ensure_bucket(emulator, _split(store)[0])
    with tempfile.TemporaryDirectory(prefix="kopsible-seed-") as tmp:
        key_path = os.path.join(tmp, "id.pub")
        with open(key_path, "w") as handle:
            handle.write(ssh_public_key.strip() + "\n")
        run_kops(
            emulator,
            store,
            [
                "create",
                "cluster",
                "--name",
                name,
                "--cloud",
                "aws",
                "--zones",
                "us-east-1a,us-east-1b",
                "--control-plane-zones",
                "us-east-1a",
                "--node-size",
                "t3.medium",
                "--control-plane-size",
                "t3.medium",
                "--kubernetes-version",
                "1.34.1",
                "--channel",
                "none",
                "--image",
                UBUNTU_AMI,
                "--ssh-public-key",
                key_path,
                "--cloud-labels",
                "environment=dev,team=platform",
            ],
        )
    s3 = emulator.client("s3")
    bucket, prefix = _split(store)
    folder = prefix + name + "/"
    objects = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=folder):
        for obj in page.get("Contents", []):
            objects[obj["Key"][len(folder) :]] = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return {"store": store.rstrip("/"), "name": name, "region": SEED_REGION, "objects": objects}


def clone_objects(template, store, name, region=None, kubernetes_version=None, cloud_labels=None):
    """The template's objects rewritten for cluster ``name`` in ``store`` (dict: relative key -> bytes).

    Text rewrites (keys and YAML): the template's ``configBase`` -> ``STORE/NAME``, its cluster name ->
    ``name``, its region -> ``region`` (subnet and group zones and names follow). Structured rewrites
    of ``config``: ``spec.kubernetesVersion`` and ``spec.cloudLabels`` (replaced as a whole) when given.
    """
    old_base = "%s/%s" % (template["store"], template["name"])
    new_base = "%s/%s" % (store.rstrip("/"), name)
    region = region or template["region"]
    out = {}
    for rel, body in template["objects"].items():
        if rel == "config" or rel.startswith("instancegroup/"):
            text = body.decode().replace(old_base, new_base).replace(template["name"], name)
            text = text.replace(template["region"], region)
            if rel == "config" and (kubernetes_version or cloud_labels is not None):
                data = yaml.safe_load(text)
                if kubernetes_version:
                    data["spec"]["kubernetesVersion"] = kubernetes_version
                if cloud_labels is not None:
                    data["spec"]["cloudLabels"] = dict(cloud_labels)
                text = yaml.safe_dump(data, default_flow_style=False, sort_keys=False)
            body = text.encode()
        out[rel.replace(template["region"], region)] = body
    return out


def default_variant(index):
    """The variation of clone number ``index`` (dict of clone_objects keyword arguments): region cycles
    every clone through REGIONS, the Kubernetes version every 3 through VERSIONS, the environment label
    through ENVIRONMENTS; ``team`` is ``team-<index mod 4>``."""
    return {
        "region": REGIONS[index % len(REGIONS)],
        "kubernetes_version": VERSIONS[(index // len(REGIONS)) % len(VERSIONS)],
        "cloud_labels": {"environment": ENVIRONMENTS[index % len(ENVIRONMENTS)], "team": "team-%d" % (index % 4)},
    }


def build_store(emulator, template, store, count, variant=default_variant, names=None, workers=16):
    """Write ``count`` clusters ``c0.k8s.local`` ... into ``store`` (creating its bucket); returns
    ``{name: variant dict}``. ``names(i)`` gives the i-th name (default ``c<i>.k8s.local``)."""
    bucket, prefix = _split(store)
    ensure_bucket(emulator, bucket)
    s3 = _client(emulator, workers)
    plan = {}
    puts = []
    for index in range(count):
        name = names(index) if names else "c%d.k8s.local" % index
        plan[name] = variant(index)
        for rel, body in clone_objects(template, store, name, **plan[name]).items():
            puts.append((prefix + name + "/" + rel, body))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda item: s3.put_object(Bucket=bucket, Key=item[0], Body=item[1]), puts))
    return plan


def _client(emulator, workers):
    """An S3 client for the emulator whose connection pool fits ``workers`` threads."""
    import boto3
    from botocore.config import Config

    env = emulator.aws_env()
    return boto3.session.Session().client(
        "s3",
        endpoint_url=emulator.url,
        region_name=env["AWS_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        config=Config(max_pool_connections=workers),
    )


def empty_bucket(emulator, bucket):
    """Delete every object of ``bucket`` (returns the number deleted)."""
    s3 = emulator.client("s3")
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket) for o in page.get("Contents", [])]
    for start in range(0, len(keys), 1000):
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start : start + 1000]]})
    return len(keys)
