# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the docs test takes for an example, what its markers mean, and that an example
that fails, or lacks what the page expects, is reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.tests.docs.examples import markers_of, page_examples
from ansible_collections.gpucloud.platform.tests.docs.test_docs import run_example

PAGE = """# A page

```bash
echo one
```

<!-- docs-test: skip needs a GPU -->
```sh
nvidia-smi
```

```yaml
- name: A task
  gpucloud.platform.tenant_info:
```

```yaml
tenants:
  - name: alpha
```

<!-- docs-test: file /tmp/x.yml -->
```yaml
tenants: []
```

<!-- docs-test: fails must be; expect ignored -->
```console
$ false
output line
```

```text
not an example
```
"""


def test_the_examples_of_a_page_in_order():
    examples = page_examples("p.md", PAGE)
    assert [(e.line, e.kind) for e in examples] == [
        (3, "script"),
        (8, "script"),
        (12, "tasks"),
        (23, "file"),
        (28, "script"),
    ]
    assert examples[1].skip == "needs a GPU" and examples[0].skip is None
    assert examples[3].path == "/tmp/x.yml"
    assert examples[4].text == "false\n" and examples[4].fails == "must be"


def test_a_marker_applies_to_the_next_block_only_and_unknown_ones_are_refused():
    page = "<!-- docs-test: skip why -->\n\ntext between\n\n```bash\necho\n```\n"
    (example,) = page_examples("p.md", page)
    assert example.skip is None
    assert markers_of("skip a; expect b; expect c") == {"skip": ["a"], "expect": ["b", "c"]}
    with pytest.raises(ValueError, match="unknown docs-test marker 'run'"):
        markers_of("run now")
    # A reason may hold a ";": what follows it continues the marker before.
    assert markers_of("skip needs a site; the local commands follow; expect x") == {
        "skip": ["needs a site; the local commands follow"],
        "expect": ["x"],
    }


@pytest.fixture
def env():
    return dict(os.environ)


def test_a_failing_example_and_a_missing_expectation_are_reported(env, tmp_path: Path):
    failing, expecting, refusing, refused = page_examples(
        "p.md",
        "```bash\nexit 3\n```\n"
        "<!-- docs-test: expect hello -->\n```bash\necho bye\n```\n"
        "<!-- docs-test: fails nope -->\n```bash\necho fine\n```\n"
        "<!-- docs-test: fails nope -->\n```bash\necho nope; exit 1\n```\n",
    )
    assert run_example(failing, env, tmp_path).startswith("exit 3")
    assert "lacks ['hello']" in run_example(expecting, env, tmp_path)
    assert "ran without one" in run_example(refusing, env, tmp_path)
    assert run_example(refused, env, tmp_path) is None
