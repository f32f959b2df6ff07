"""Valid and invalid values as the platform defines them, for the bad-input matrix (tools/harness/inputs.py):
never from the collection's own rules, so that a rule stricter or looser than the platform's shows.

- kops: the real binary's ``kops create cluster --help`` (:func:`kops_create_help`), and the values its source
  accepts beyond what the help lists (:data:`KOPS_SOURCE_EXTRA`, each cited; kops v1.36.2).
- AWS: documented limits (:data:`AWS_RULES`, each with the page it comes from).
"""

import functools
import re
import subprocess

from .kops_env import kops_binary

# Flags of `kops create cluster` whose help text lists the values, and how to read them.
_HELP_FLAGS = {
    "networking": re.compile(r"Networking mode\.\s+(.*?)\.\s*\(default"),
    "cloud": re.compile(r"Cloud provider to use - (.*)$"),
    "dns": re.compile(r"DNS type to use: (.*)$"),
    "topology": re.compile(r"Network topology for the cluster: (.*?)\. Defaults"),
    "api-loadbalancer-type": re.compile(r"Type of load balancer for the Kubernetes API: (.*)$"),
    "target": re.compile(r"Valid targets: (.*?)\. Set"),
}

# Values kops v1.36.2 accepts that its --help does not list (read in ~/go/pkg/mod/k8s.io/kops@v1.36.2):
KOPS_SOURCE_EXTRA = {
    # upup/pkg/fi/cloudup/new_cluster.go:1273-1316 setupNetworking: aliases and modes beyond the help text
    "networking": ("kopeio-vxlan", "kopeio", "amazon-vpc-routed-eni", "cilium-eni", "gcp", "gce"),
    # upup/pkg/fi/cloudup/new_cluster.go:330-390 (the cloud switch; ids in pkg/apis/kops/channel.go:289-299)
    "cloud": ("azure", "scaleway", "linode", "metal"),
}


@functools.lru_cache(maxsize=None)
def kops_create_help(binary=None):
    """``{flag: (value, ...)}`` for the flags of :data:`_HELP_FLAGS`, read from the real kops'
    ``kops create cluster --help`` (``flannel-vxlan (or flannel)`` gives both names). RuntimeError when a flag's
    line is missing (a kops whose help changed: the lists must be looked at again)."""
    text = subprocess.run([binary or kops_binary(), "create", "cluster", "--help"], capture_output=True, text=True, check=True).stdout
    found = {}
    for flag, pattern in _HELP_FLAGS.items():
        line = next((ln for ln in text.splitlines() if re.match(r"\s+(-\w, )?--%s \w+\s{2,}\S" % re.escape(flag), ln)), None)
        match = pattern.search(line or "")
        if not match:
            raise RuntimeError("kops create cluster --help: no value list for --%s in %r" % (flag, line))
        words = re.findall(r"[a-z][a-z0-9-]*", match.group(1).replace("(or ", ",").replace(" or ", ","))
        found[flag] = tuple(w for w in words if w not in ("or",))
    return found


def kops_values(flag):
    """Every value kops accepts for ``flag``: its --help list and :data:`KOPS_SOURCE_EXTRA` (tuple)."""
    return tuple(sorted(set(kops_create_help()[flag]) | set(KOPS_SOURCE_EXTRA.get(flag, ()))))


# AWS's documented rules, with values that break them (several per rule).
AWS_RULES = {
    # docs.aws.amazon.com/Route53/latest/APIReference/API_HostedZoneConfig.html: Comment, maximum length 256
    "route53 comment": {"max": 256},
    # docs.aws.amazon.com/Route53/latest/APIReference/API_ResourceRecordSet.html: TTL 0 to 2147483647
    "route53 ttl": {"min": 0, "max": 2147483647},
    # docs.aws.amazon.com/Route53/latest/DeveloperGuide/DomainNameFormat.html: labels of at most 63 octets,
    # names of at most 255 octets (253 characters as text)
    "dns name": {"label_max": 63, "name_max": 253},
    # docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html: 3 to 63 characters (legacy us-east-1
    # buckets up to 255, with uppercase and '_'), letters, digits, '.', '-'; no spaces or other characters
    "s3 bucket": {"invalid": ("a", "ab", "b" * 256, "bad bucket", "bucket/", "b%cket", "bucket!", "")},
    # docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-types.html#instance-type-names: family.size
    "ec2 instance type": {"invalid": ("t3medium", "t3.", ".medium", "t3 medium", "t3..medium", "T3.MEDIUM")},
    # docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html: an IPv4 CIDR, prefix /16 to /28 for a VPC
    "cidr": {"invalid": ("10.0.0.1/16", "10.0.0.0/33", "300.0.0.0/8", "10.0.0.0/", "0.0.0.0/-1", "anywhere")},
}
