"""Offline stand-in for pip's get-pip.py bootstrap script.

ansible-test bootstraps pip into the virtual environments of its sanity tests
by running a get-pip.py it downloads from a site this machine cannot reach;
it uses a cached copy when one exists. scripts/test puts this file there
instead: it installs the interpreter's bundled pip (ensurepip) and then runs
``pip install`` with the arguments ansible-test gives, which the package
index serves.
"""

import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
