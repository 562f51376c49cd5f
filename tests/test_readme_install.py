"""The README's quick start, as a newcomer runs it: on a fresh Debian 12 (its own Python 3.11, nothing of ours), the
two commands of the README's first code block, with the clone replaced by the committed tree (`git archive`: what a
clone would bring). Runs only when selected (`-m image`): it needs buildah and the base image of
deploy/base-image.sh, and installs every dependency from the package index (minutes)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid

import pytest

from tests.harness import ROOT

BASE = os.environ.get("CITEBOT_TEST_BASE_IMAGE", "localhost/citebot-base:bookworm")
EXPECTED = "Anyone may use the defibrillator"


def quick_start() -> list[str]:
    """The lines of the README's first bash block, under "Quick start"."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the README's quick start has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_quick_start_is_clone_then_one_line_that_installs_into_a_virtualenv_and_asks():
    lines = quick_start()
    assert len(lines) == 2 and lines[0].startswith("git clone ") and lines[0].endswith("&& cd citebot")
    assert "python3 -m venv .venv" in lines[1] and "pip install -e ." in lines[1]
    assert lines[1].index("venv") < lines[1].index("pip install") < lines[1].index("citebot ask")


@pytest.mark.image
@pytest.mark.timeout(1800)
def test_the_readme_quick_start_works_on_a_fresh_debian(tmp_path):
    buildah = shutil.which("buildah")
    if buildah is None:
        pytest.skip("buildah is not installed")
    env = {**os.environ, "BUILDAH_ISOLATION": os.environ.get("BUILDAH_ISOLATION", "chroot")}
    # As deploy/smoke.sh and deploy/base-image.sh give it: the flag, which every buildah reads.
    storage = ["--storage-driver", os.environ["STORAGE_DRIVER"]] if os.environ.get("STORAGE_DRIVER") else []
    buildah_cmd = [buildah, *storage]
    if subprocess.run([*buildah_cmd, "inspect", "--type", "image", BASE], env=env,
                      capture_output=True).returncode != 0:
        pytest.skip(f"no base image {BASE}: run deploy/base-image.sh first")
    archive = tmp_path / "citebot.tar"
    subprocess.run(["git", "archive", "--format=tar", "--prefix=citebot/", "-o", str(archive), "HEAD"], cwd=ROOT,
                   check=True)
    name = f"citebot-readme-{uuid.uuid4().hex[:8]}"
    subprocess.run([*buildah_cmd, "from", "--pull-never", "--name", name, BASE], env=env, check=True,
                   capture_output=True)
    try:
        subprocess.run([*buildah_cmd, "add", name, str(archive), "/root/"], env=env, check=True, capture_output=True)
        _, install_and_ask = quick_start()
        done = subprocess.run([*buildah_cmd, "run", "--network", "host", "--workingdir", "/root/citebot", name, "--",
                               "bash", "-c", install_and_ask], env=env, capture_output=True, text=True, timeout=1700)
    finally:
        subprocess.run([*buildah_cmd, "rm", name], env=env, capture_output=True)
    print(f"$ {install_and_ask}\n" + "\n".join(done.stdout.splitlines()[-8:]))
    assert done.returncode == 0, done.stderr[-3000:]
    assert EXPECTED in done.stdout
