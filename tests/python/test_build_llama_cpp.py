"""scripts/build-llama-cpp.sh on the CPUs the project meets (issue 44), without building llama.cpp.

On an Intel Xeon with AMX, GGML_NATIVE's -march=native compiled ggml's AMX matrix path and every
tool died with SIGILL at its first matrix product. The script now builds without AMX wherever the
CPU's flags list amx_tile. The rule is checked here by faking the CPU's flags
(FRUGAL_LLAMA_CPP_CPU_FLAGS) and reading the plan (`--print-config`); the flags it chose are
then given to this compiler with an AMX CPU's -march, to show they really leave AMX out.

A tool that crashes at start is an error naming the signal, both from the script (its
`--version` check, here on a stand-in binary) and from the tests' llama-server fixture.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from test_fleet_llamacpp import LlamaServer, exit_text

SCRIPT = ROOT / "scripts" / "build-llama-cpp.sh"
REAL_FLAGS = Path("/proc/cpuinfo").read_text().split("\nflags", 1)[1].split("\n", 1)[0]
REAL_FLAGS = REAL_FLAGS.split(":", 1)[1].split()
NO_AMX = [f for f in REAL_FLAGS if not f.startswith("amx")]
# What an Emerald Rapids Xeon lists (lscpu) on top of AVX-512: the three AMX flags.
WITH_AMX = NO_AMX + ["amx_bf16", "amx_tile", "amx_int8"]


def config(flags: list[str] | None, **env: str) -> dict[str, list[str]]:
    """The script's plan, `key: value` lines, as key -> values (cmake-flag repeats)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("FRUGAL_LLAMA_CPP_")}
    if flags is not None:
        e["FRUGAL_LLAMA_CPP_CPU_FLAGS"] = " ".join(flags)
    e.update(env)
    out = subprocess.run([str(SCRIPT), "--print-config"], env=e, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    plan: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        key, _, value = line.partition(": ")
        plan.setdefault(key, []).append(value)
    return plan


def cxx_flags(plan: dict[str, list[str]]) -> list[str]:
    for flag in plan["cmake-flag"]:
        if flag.startswith("-DCMAKE_CXX_FLAGS="):
            return flag.split("=", 1)[1].split()
    return []


def amx_macros(*flags: str) -> set[str]:
    """The __AMX_*__ macros this compiler defines for C++ with these flags."""
    out = subprocess.run(["c++", *flags, "-x", "c++", "-dM", "-E", "/dev/null"],
                         capture_output=True, text=True, check=True)
    return {line.split()[1] for line in out.stdout.splitlines() if line.split()[1:2]
            and line.split()[1].startswith("__AMX_")}


def test_a_cpu_with_amx_gets_a_native_build_without_it():
    plan = config(WITH_AMX)
    assert plan["isa"] == ["native"]
    assert plan["amx"] == ["off"]
    flags = plan["cmake-flag"]
    assert "-DGGML_NATIVE=ON" in flags
    for opt in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
        assert f"-D{opt}=OFF" in flags
    for ext in ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"):
        assert ext in cxx_flags(plan)
    c_flags = [f for f in flags if f.startswith("-DCMAKE_C_FLAGS=")]
    assert c_flags and "-mno-amx-int8" in c_flags[0]
    assert "SIGILL" in plan["note"][0] and "amx_tile" in plan["note"][0]
    # The stamp records the choice: a build cached on a machine without AMX is not reused.
    stamp = plan["stamp"][0]
    assert stamp.endswith(" amx=off") and "amx_tile" in stamp
    assert stamp != config(NO_AMX)["stamp"][0]


def test_the_chosen_flags_leave_amx_out_of_an_amx_cpus_native_code():
    # -march=sapphirerapids is what -march=native means on a Sapphire/Emerald Rapids Xeon; ggml
    # compiles its AMX path under `#if defined(__AMX_INT8__) && defined(__AVX512VNNI__)`.
    march = "-march=sapphirerapids"
    assert {"__AMX_TILE__", "__AMX_INT8__", "__AMX_BF16__"} <= amx_macros(march)
    chosen = cxx_flags(config(WITH_AMX))
    assert amx_macros(march, *chosen) == set()
    # As ggml's CMakeLists orders them (ours in CMAKE_CXX_FLAGS first, -march=native after),
    # the explicit -mno-amx-* still win.
    assert amx_macros(*chosen, march) == set()
    # And -mno-amx-tile alone would not have been enough.
    assert "__AMX_INT8__" in amx_macros(march, "-mno-amx-tile")


def test_a_cpu_without_amx_builds_as_before():
    plan = config(NO_AMX)
    assert plan["amx"] == ["none"]
    assert plan["cmake-flag"] == ["-DGGML_NATIVE=ON"]
    assert "amx=" not in plan["stamp"][0]
    # This machine's own stamp is the one earlier builds wrote (the flags avx/f16c/fma/sse/bmi,
    # sorted), so a cached build here is kept.
    if not any(f.startswith("amx") for f in REAL_FLAGS):
        old_cpu = " ".join(sorted(f for f in REAL_FLAGS
                                  if f.startswith(("avx", "f16c", "fma", "sse", "bmi")))) + " "
        real = config(None)["stamp"][0]
        assert real.endswith(" cpu=" + old_cpu), real
        assert config(None)["cmake-flag"] == ["-DGGML_NATIVE=ON"]


def test_the_avx2_build_needs_no_amx_flags():
    plan = config(WITH_AMX, FRUGAL_LLAMA_CPP_ISA="avx2")
    assert plan["amx"] == ["none"]
    assert not any("amx" in f.lower() for f in plan["cmake-flag"])
    assert "-DGGML_NATIVE=OFF" in plan["cmake-flag"]


def fake_cached_build(tmp_path: Path, body: str) -> dict[str, str]:
    """A cached llama-server under tmp_path whose stamp matches this machine, running `body`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRUGAL_LLAMA_CPP_")}
    env["FRUGAL_LLAMA_CPP_DIR"] = str(tmp_path)
    stamp = config(None, FRUGAL_LLAMA_CPP_DIR=str(tmp_path))["stamp"][0]
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / ".stamp").write_text(stamp + "\n")
    tool = tmp_path / "bin" / "llama-server"
    tool.write_text("#!/bin/sh\n" + body + "\n")
    tool.chmod(0o755)
    return env


def test_a_cached_tool_that_crashes_at_start_is_a_clear_error(tmp_path):
    env = fake_cached_build(tmp_path, "kill -ILL $$")
    out = subprocess.run([str(SCRIPT), "llama-server"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1
    assert "llama-server crashed at start: killed by SIGILL (illegal instruction" in out.stderr


def test_a_cached_tool_that_starts_is_used(tmp_path):
    env = fake_cached_build(tmp_path, 'echo "version: 0 (stand-in)"')
    out = subprocess.run([str(SCRIPT), "--print-bin", "llama-server"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "bin")
    assert "cached" in out.stderr


def test_the_fixture_names_a_crash_at_start(tmp_path):
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\necho loading model\nkill -ILL $$\n")
    fake.chmod(0o755)
    server = LlamaServer(tmp_path / "model.gguf", tmp_path / "log.txt", binary=fake)
    with pytest.raises(pytest.fail.Exception) as failed:
        server.start(timeout=30)
    text = str(failed.value)
    assert text.startswith("llama-server crashed at start: killed by SIGILL (illegal instruction")
    assert "loading model" in text  # the log's tail comes with it


def test_exit_text():
    assert exit_text(-4).startswith("killed by SIGILL (illegal")
    assert exit_text(132).startswith("killed by SIGILL")
    assert exit_text(-11) == "killed by SIGSEGV"
    assert exit_text(1) == "exited 1"
