# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every module of the collection documents alike: its authors, its Python
requirements (those of requirements.txt) and its check mode and diff mode support.

A module extends it after ``kubernetes.core.k8s_auth_options``. Where a module's
support is not full it says so in its own ``attributes`` (``support`` and
``details``); the description here stays.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 30.1.0
  - jsonpatch >= 1.33
  - PyYAML >= 6.0
  - boto3 >= 1.34
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
"""
