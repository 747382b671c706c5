"""Bad input makes `frugal` exit with status 2 and exactly one stderr line that starts with
"frugal: error: " — never a crash, a hang, a stack trace or a partial result."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import synth

PREFIX = "frugal: error: "


def assert_usage_error(p, what: str) -> None:
    err = p.stderr.decode("utf-8", errors="replace")
    lines = err.splitlines()
    assert p.returncode == 2, (
        f"{what}: exit status {p.returncode} (expected 2); stderr: {err[-2000:]!r}")
    assert len(lines) == 1 and lines[0].startswith(PREFIX), (
        f"{what}: expected exactly one stderr line starting with {PREFIX!r}, got {lines!r}")


def expect_error(frugal, what, *args, timeout=60):
    p = frugal.run(*args, timeout=timeout)
    assert_usage_error(p, what)
    return p


# --------------------------------------------------------------------------------------------
# Fixtures: bad files


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    """A valid tiny llama GGUF with a 32-token context."""
    path = tmp_path_factory.mktemp("tiny") / "tiny_ctx32.gguf"
    synth.write_gguf_llama(str(path), wtype="F32", ctx=32, seed=5)
    return path


def gguf_header(n_tensors: int, n_kv: int, version: int = 3, magic: bytes = b"GGUF") -> bytes:
    return magic + struct.pack("<IQQ", version, n_tensors, n_kv)


def write_bytes(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


# --------------------------------------------------------------------------------------------
# Files that are not models


def test_missing_file(frugal, tmp_path):
    missing = tmp_path / "nope.gguf"
    expect_error(frugal, "info on a missing file", "info", missing)
    expect_error(frugal, "logits on a missing file", "logits", "-m", missing, "--tokens", "1,2",
                 "-o", tmp_path / "o.f32")
    expect_error(frugal, "generate on a missing file", "generate", "-m", missing, "-p", "hi")


def test_empty_file(frugal, tmp_path):
    p = write_bytes(tmp_path, "empty.gguf", b"")
    expect_error(frugal, "info on an empty file", "info", p)
    expect_error(frugal, "generate on an empty file", "generate", "-m", p, "-p", "hi", "-n", "1")


def test_random_bytes(frugal, tmp_path):
    data = np.random.default_rng(0).integers(0, 256, size=1 << 20, dtype=np.uint8).tobytes()
    p = write_bytes(tmp_path, "random.gguf", data)
    expect_error(frugal, "info on random bytes", "info", p)
    expect_error(frugal, "logits on random bytes", "logits", "-m", p, "--tokens", "1",
                 "-o", tmp_path / "o.f32")


def test_bad_magic(frugal, tmp_path, tiny_gguf):
    data = bytearray(tiny_gguf.read_bytes())
    data[0:4] = b"GGUX"
    p = write_bytes(tmp_path, "badmagic.gguf", bytes(data))
    expect_error(frugal, "info with bad magic", "info", p)


def test_unsupported_version(frugal, tmp_path, tiny_gguf):
    data = bytearray(tiny_gguf.read_bytes())
    data[4:8] = struct.pack("<I", 99)
    p = write_bytes(tmp_path, "v99.gguf", bytes(data))
    expect_error(frugal, "info on GGUF version 99", "info", p)


@pytest.mark.parametrize("n_tensors,n_kv", [(1 << 60, 0), (0, 1 << 60), (1 << 63, 1 << 63)])
def test_absurd_counts(frugal, tmp_path, n_tensors, n_kv):
    # A header that claims more entries than the file could hold: reject, don't allocate.
    p = write_bytes(tmp_path, "huge.gguf", gguf_header(n_tensors, n_kv) + b"\0" * 64)
    expect_error(frugal, f"info with {n_tensors} tensors / {n_kv} kv", "info", p, timeout=30)
    expect_error(frugal, f"logits with {n_tensors} tensors / {n_kv} kv", "logits", "-m", p,
                 "--tokens", "1", "-o", tmp_path / "o.f32", timeout=30)


def test_absurd_string_length(frugal, tmp_path):
    # One KV whose key claims to be 2^62 bytes long.
    data = gguf_header(0, 1) + struct.pack("<Q", 1 << 62) + b"general.architecture"
    p = write_bytes(tmp_path, "longkey.gguf", data)
    expect_error(frugal, "info with a 2^62-byte key", "info", p, timeout=30)


def test_tensor_data_beyond_end(frugal, tmp_path, tiny_gguf):
    # Header and metadata intact, tensor data cut short.
    data = tiny_gguf.read_bytes()
    p = write_bytes(tmp_path, "short.gguf", data[: len(data) - 1000])
    expect_error(frugal, "logits with truncated tensor data", "logits", "-m", p, "--tokens", "1",
                 "-o", tmp_path / "o.f32")


@pytest.mark.parametrize("keep", [10, 24, 4096, 2 << 20, 40 << 20])
def test_truncated_real_gguf(frugal, tmp_path, smollm2_gguf, keep):
    # Cut inside the header, inside the metadata (vocabulary), inside the tensor infos/data.
    with open(smollm2_gguf, "rb") as f:
        data = f.read(keep)
    p = write_bytes(tmp_path, f"trunc_{keep}.gguf", data)
    expect_error(frugal, f"generate on the real GGUF cut at {keep} bytes", "generate", "-m", p,
                 "-p", "hi", "-n", "1")


def test_unknown_architecture_gguf(frugal, tmp_path):
    import gguf

    p = tmp_path / "mamba9.gguf"
    w = gguf.GGUFWriter(str(p), "mamba9")
    w.add_block_count(1)
    w.add_context_length(32)
    w.add_embedding_length(32)
    w.add_tensor("token_embd.weight", np.zeros((8, 32), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    e = expect_error(frugal, "generate on arch mamba9", "generate", "-m", p, "-p", "hi", "-n", "1")
    assert b"mamba9" in e.stderr, e.stderr
    expect_error(frugal, "logits on arch mamba9", "logits", "-m", p, "--tokens", "1",
                 "-o", tmp_path / "o.f32")
    # `info` still describes a well-formed file it cannot run, and says why.
    info = frugal.ok("info", p, "--tensors").stdout.decode()
    assert "mamba9" in info and "loadable:      no" in info and "token_embd.weight" in info, info
    j = json.loads(frugal.ok("info", p, "--json").stdout)
    assert j["loadable"] is False and "mamba9" in j["not_loadable_reason"], j


def test_unknown_architecture_hf(frugal, tmp_path):
    folder = tmp_path / "hf_mamba9"
    synth.write_hf_llama(str(folder), dtype="F32")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "mamba9"
    cfg["architectures"] = ["Mamba9ForCausalLM"]
    (folder / "config.json").write_text(json.dumps(cfg))
    expect_error(frugal, "logits on HF model_type mamba9", "logits", "-m", folder, "--tokens", "1",
                 "-o", tmp_path / "o.f32")


def test_directory_is_not_a_model(frugal, tmp_path):
    empty = tmp_path / "emptydir"
    empty.mkdir()
    expect_error(frugal, "info on an empty directory", "info", empty)
    expect_error(frugal, "generate on an empty directory", "generate", "-m", empty, "-p", "hi")


def test_hf_folder_missing_shard(frugal, tmp_path):
    folder = tmp_path / "hf_missing_shard"
    synth.write_hf_llama(str(folder), dtype="F16", shards=2)
    (folder / "model-00002-of-00002.safetensors").unlink()
    expect_error(frugal, "logits with a shard missing", "logits", "-m", folder, "--tokens", "1",
                 "-o", tmp_path / "o.f32")


def test_hf_folder_corrupt_safetensors_header(frugal, tmp_path):
    folder = tmp_path / "hf_bad_header"
    synth.write_hf_llama(str(folder), dtype="F32")
    st = folder / "model.safetensors"
    data = bytearray(st.read_bytes())
    data[0:8] = struct.pack("<Q", 1 << 40)  # header length far beyond the file
    st.write_bytes(bytes(data))
    expect_error(frugal, "logits with a bad safetensors header", "logits", "-m", folder,
                 "--tokens", "1", "-o", tmp_path / "o.f32")


def test_hf_folder_deeply_nested_safetensors_header(frugal, tmp_path):
    """A header that nests a million levels deep: refused with one line, never a stack overflow
    when it is walked (issue 25)."""
    folder = tmp_path / "hf_deep_header"
    synth.write_hf_llama(str(folder), dtype="F32")
    st = folder / "model.safetensors"
    header = b'{"__metadata__": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}"
    st.write_bytes(struct.pack("<Q", len(header)) + header)
    p = expect_error(frugal, "logits with a deeply nested safetensors header", "logits", "-m",
                     folder, "--tokens", "1", "-o", tmp_path / "o.f32")
    assert b"nests too deeply" in p.stderr, p.stderr


# --------------------------------------------------------------------------------------------
# Valid model, bad request


def test_prompt_longer_than_context(frugal, tiny_gguf):
    prompt = "the cat and the dog went to the park. " * 20  # far more than 32 tokens
    expect_error(frugal, "generate with a prompt longer than the context", "generate",
                 "-m", tiny_gguf, "-p", prompt, "-n", "4")


def test_tokens_longer_than_context(frugal, tiny_gguf, tmp_path):
    toks = ",".join(["5"] * 40)
    expect_error(frugal, "logits with 40 tokens and a 32-token context", "logits",
                 "-m", tiny_gguf, "--tokens", toks, "-o", tmp_path / "o.f32")


@pytest.mark.parametrize("tokens", ["1,x,3", "", "1,,2", "-1", "999999", "1.5"])
def test_bad_token_lists(frugal, tiny_gguf, tmp_path, tokens):
    expect_error(frugal, f"logits --tokens {tokens!r}", "logits", "-m", tiny_gguf,
                 "--tokens", tokens, "-o", tmp_path / "o.f32")


@pytest.mark.parametrize("args", [
    ["--temperature", "-1"],
    ["--temperature", "abc"],
    ["--threads", "-3"],
    ["--threads", "many"],
    ["-n", "abc"],
    ["--seed", "not-a-number"],
    ["--bogus-flag"],
], ids=lambda a: " ".join(a))
def test_bad_generate_flags(frugal, tiny_gguf, args):
    expect_error(frugal, f"generate {' '.join(args)}", "generate", "-m", tiny_gguf, "-p", "hi",
                 *args)


@pytest.mark.parametrize("ctx", ["-5", "abc", "1.5"])
def test_bad_perplexity_ctx(frugal, tiny_gguf, tmp_path, ctx):
    # (--ctx 0 is not here: it means "the model's context", like --threads 0 means "all CPUs".)
    txt = write_bytes(tmp_path, "t.txt", b"the cat and the dog " * 10)
    expect_error(frugal, f"perplexity --ctx {ctx}", "perplexity", "-m", tiny_gguf, "-f", txt,
                 "--ctx", ctx)


def test_perplexity_missing_text_file(frugal, tiny_gguf, tmp_path):
    expect_error(frugal, "perplexity on a missing text file", "perplexity", "-m", tiny_gguf,
                 "-f", tmp_path / "missing.txt")


def test_dequant_unknown_tensor(frugal, tiny_gguf, tmp_path):
    expect_error(frugal, "dequant of a tensor that does not exist", "dequant", "-m", tiny_gguf,
                 "--tensor", "no.such.tensor", "-o", tmp_path / "o.f32")


def test_missing_model_flag_and_unknown_command(frugal):
    expect_error(frugal, "generate without -m", "generate", "-p", "hi")
    expect_error(frugal, "unknown subcommand", "frobnicate")


def test_valid_tiny_model_works(frugal, tiny_gguf, tmp_path):
    # Control for the cases above: the same tiny model with good arguments succeeds.
    frugal.ok("info", tiny_gguf)
    frugal.ok("generate", "-m", tiny_gguf, "-p", "the cat", "-n", "3", "--temperature", "0")
    out = tmp_path / "ok.f32"
    frugal.ok("logits", "-m", tiny_gguf, "--tokens", "1,2,3", "-o", out)
    assert out.stat().st_size == 3 * synth.tiny_spec()["n_vocab"] * 4


# --------------------------------------------------------------------------------------------
# Hand-built GGUF files with one defect each (own minimal writer: the gguf package refuses to
# write most of these).

GGUF_STRING, GGUF_UINT32, GGUF_ARRAY = 8, 4, 9


def _str(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def raw_gguf(tensors, kv_extra=b"", n_kv_extra=0, alignment=32, data_len=4096) -> bytes:
    """tensors: list of (name, dims, ggml_type, offset). KV: general.architecture = llama."""
    kv = _str(b"general.architecture") + struct.pack("<I", GGUF_STRING) + _str(b"llama") + kv_extra
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1 + n_kv_extra) + kv
    for name, dims, typ, off in tensors:
        head += _str(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        head += struct.pack("<IQ", typ, off)
    head += b"\0" * ((alignment - len(head) % alignment) % alignment)
    return head + b"\0" * data_len


OK_TENSOR = [(b"token_embd.weight", [32, 8], 0, 0)]

RAW_CASES = {
    "unknown tensor type 99": raw_gguf([(b"token_embd.weight", [32, 8], 99, 0)]),
    "9 dimensions": raw_gguf([(b"token_embd.weight", [1] * 9, 0, 0)]),
    "2^40 x 2^40 elements": raw_gguf([(b"token_embd.weight", [1 << 40, 1 << 40], 0, 0)]),
    "dims product overflows 64 bits": raw_gguf([(b"token_embd.weight", [1 << 33] * 4, 0, 0)]),
    "data past the end": raw_gguf([(b"token_embd.weight", [32, 64], 0, 0)], data_len=1024),
    "misaligned offset": raw_gguf([(b"token_embd.weight", [32, 8], 0, 3)]),
    "offset past the end": raw_gguf([(b"token_embd.weight", [32, 8], 0, 1 << 50)]),
    "Q8_0 row not a multiple of 32": raw_gguf([(b"token_embd.weight", [33, 2], 8, 0)]),
    "duplicate tensor name": raw_gguf([(b"a.weight", [8], 0, 0), (b"a.weight", [8], 0, 32)]),
    "unknown kv value type": raw_gguf(
        OK_TENSOR, kv_extra=_str(b"x.y") + struct.pack("<I", 77) + b"\0" * 8, n_kv_extra=1),
    "string array of 2^60 items": raw_gguf(
        OK_TENSOR,
        kv_extra=_str(b"tokenizer.ggml.tokens")
        + struct.pack("<IIQ", GGUF_ARRAY, GGUF_STRING, 1 << 60),
        n_kv_extra=1),
    "array of arrays 2^40 deep": raw_gguf(
        OK_TENSOR, kv_extra=_str(b"x.nested") + struct.pack("<IIQ", GGUF_ARRAY, GGUF_ARRAY, 1 << 40)
        + struct.pack("<IQ", GGUF_ARRAY, 1 << 40) * 4, n_kv_extra=1),
}


def test_raw_gguf_writer_control(frugal, tmp_path):
    # The defect-free file from the same writer parses: the cases below fail for their defect.
    p = write_bytes(tmp_path, "ok.gguf", raw_gguf([(b"token_embd.weight", [32, 8], 0, 0),
                                                   (b"b.weight", [8], 0, 1024)]))
    assert frugal.dequant(p, "b.weight", tmp_path).size == 8
    assert frugal.dequant(p, "token_embd.weight", tmp_path).size == 256


@pytest.mark.parametrize("case", list(RAW_CASES), ids=list(RAW_CASES))
def test_malformed_gguf(frugal, tmp_path, case):
    # `dequant` needs nothing but the GGUF container, so only the defect can make it fail.
    p = write_bytes(tmp_path, "bad.gguf", RAW_CASES[case])
    name = "a.weight" if case == "duplicate tensor name" else "token_embd.weight"
    expect_error(frugal, f"dequant on GGUF with {case}", "dequant", "-m", p, "--tensor", name,
                 "-o", tmp_path / "o.f32", timeout=30)


def test_context_too_large_for_memory_is_refused(frugal, smollm2_gguf):
    # 2^20 tokens of SmolLM2 KV cache is ~45 GiB: refused up front, not allocated (which hung).
    e = expect_error(frugal, "generate with a 2^20-token context", "generate", "-m", smollm2_gguf,
                     "-c", "1048576", "-p", "hi", "-n", "1", timeout=30)
    assert b"KV cache" in e.stderr, e.stderr
