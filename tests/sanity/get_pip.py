"""Stand-in for get-pip.py, the script ansible-test downloads to put pip into the empty virtual environments
of its sanity tests.

ansible-test fetches get-pip.py from ci-files.testing.ansible.com, a host this project's machines and CI
cannot reach; it uses a copy cached at ``~/.ansible/test/cache/get_pip_<version>.py`` instead when there
is one, and tests/unit/test_lint.py puts this file there (under its own HOME in .cache/). It does what
get-pip.py does with the same arguments (``--disable-pip-version-check pip==24.2 --no-setuptools
--no-wheel``): pip from the Python's own ensurepip, then the asked pip version from the package index.
"""

import subprocess
import sys


def main():
    """Install pip into the running interpreter's environment; the arguments are get-pip.py's.

    Each step is its own process: ensurepip blanks pip's configuration (PIP_CONFIG_FILE=/dev/null) in
    the environment of the process that calls it, and the second step needs that configuration (the
    machine's certificate authorities in /etc/pip.conf).
    """
    subprocess.run([sys.executable, "-m", "ensurepip"], check=True, stdout=subprocess.DEVNULL)
    args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
    sys.exit(subprocess.run([sys.executable, "-m", "pip", "install"] + args, check=False).returncode)


if __name__ == "__main__":
    main()
