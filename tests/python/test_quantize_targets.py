"""`frugal quantize --target llama.cpp` (issue 27): Frugal's quantization written in GGUF block
types that stock llama.cpp reads. Read back by the `gguf` package (llama.cpp's own Python
reader and dequantizer, an independent implementation of the block formats), by Frugal, and
loaded by llama.cpp's own `llama-server` (scripts/build-llama-cpp.sh), which answers with it.
RTN keeps the runs short; calibrated methods share the code path after quantization.
"""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import httpx
import numpy as np
import pytest

from test_fleet_llamacpp import LLAMA_MODEL, LlamaServer, llama_server_bin  # noqa: F401

GGUF_TYPES = {gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0,
              gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.F32}


def quantize(frugal, model, out: Path, *args):
    p = frugal.ok("quantize", "-q", "-m", model, "-o", out, "--json", "--method", "rtn", "--no-gate", *args,
                  timeout=600)
    assert out.exists()
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def files(frugal, smollm2_gguf, tmp_path_factory):
    d = tmp_path_factory.mktemp("targets")
    out = {}
    for target, preset in [("frugal", "mixed-int4-int8"), ("llama.cpp", "mixed-int4-int8")]:
        path = d / f"{target}.gguf"
        quantize(frugal, smollm2_gguf, path, "--target", target, "--group-size", "32",
                 "--preset", preset)
        out[target] = path
    sym = d / "q4_0.gguf"
    recipe = d / "q4_0.yaml"  # symmetric INT4 for the FFN: Q4_0
    recipe.write_text('name: q4_0-ffn\nrules:\n'
                      '  - {match: "blk.*.ffn_*.weight", type: int4_sym, group_size: 32}\n'
                      '  - {match: "*.weight", type: int8, group_size: 32}\n')
    quantize(frugal, smollm2_gguf, sym, "--target", "llama.cpp", "--recipe", recipe)
    out["q4_0"] = sym
    return out


def test_file_has_only_llamacpp_types_with_frugals_values(frugal, files, tmp_path):
    r = gguf.GGUFReader(files["llama.cpp"])
    types = {t.name: t.tensor_type for t in r.tensors}
    assert set(types.values()) <= GGUF_TYPES, set(types.values())
    assert types["blk.0.attn_q.weight"] == gguf.GGMLQuantizationType.Q8_0
    assert types["blk.0.ffn_down.weight"] == gguf.GGMLQuantizationType.Q4_1  # int4 = asymmetric
    assert types["token_embd.weight"] == gguf.GGMLQuantizationType.Q8_0
    keys = {f.name for f in r.fields.values()}
    assert "frugal.format_version" not in keys  # no Frugal type in the file
    assert r.fields["general.file_type"].parts[-1][0] == 3  # LLAMA_FTYPE_MOSTLY_Q4_1
    # gguf's dequantizer on the llama.cpp file equals Frugal's on its own file: the same values.
    by_name = {t.name: t for t in r.tensors}
    for name in ["blk.0.attn_q.weight", "blk.5.ffn_down.weight", "blk.29.ffn_gate.weight",
                 "token_embd.weight"]:
        t = by_name[name]
        got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1)
        want = frugal.dequant(files["frugal"], name, tmp_path)
        np.testing.assert_array_equal(got.astype(np.float32), want, err_msg=name)
    # And Frugal itself computes the same logits from either file.
    tokens = [1, 504, 3458, 282, 4649, 314, 260]
    np.testing.assert_array_equal(frugal.logits(files["llama.cpp"], tokens, tmp_path),
                                  frugal.logits(files["frugal"], tokens, tmp_path))


def test_symmetric_int4_is_q4_0(files):
    r = gguf.GGUFReader(files["q4_0"])
    types = {t.name: t.tensor_type for t in r.tensors}
    assert types["blk.3.ffn_up.weight"] == gguf.GGMLQuantizationType.Q4_0
    assert types["blk.3.attn_v.weight"] == gguf.GGMLQuantizationType.Q8_0


def test_llama_server_loads_and_answers(files, llama_server_bin, tmp_path):  # noqa: F811
    server = LlamaServer(files["llama.cpp"], tmp_path / "llama-server.log").start()
    try:
        r = httpx.post(server.url + "/v1/chat/completions", timeout=120, json={
            "model": LLAMA_MODEL, "max_tokens": 16, "temperature": 0,
            "messages": [{"role": "user", "content": "How much does shipping cost?"}]})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["usage"]["completion_tokens"] > 0
        assert body["choices"][0]["message"]["content"].strip()
    finally:
        server.stop()


@pytest.mark.parametrize("args,message", [
    (["--group-size", "64"], "groups of 32"),
    (["--target", "gguf"], "--target"),
])
def test_what_llamacpp_cannot_read_is_refused(frugal, smollm2_gguf, tmp_path, args, message):
    out = tmp_path / "x.gguf"
    if args[0] == "--group-size":
        args = ["--target", "llama.cpp", *args]
    p = frugal.run("quantize", "-q", "-m", smollm2_gguf, "-o", out, "--method", "rtn", *args)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr.decode(), p.stderr
    assert not out.exists()


def test_per_row_int8_rule_is_refused(frugal, smollm2_gguf, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text('name: perrow\nrules:\n  - {match: "*.weight", type: int8, group_size: 0}\n')
    out = tmp_path / "x.gguf"
    p = frugal.run("quantize", "-q", "-m", smollm2_gguf, "-o", out, "--method", "rtn",
                   "--target", "llama.cpp", "--recipe", recipe)
    assert p.returncode == 2, p.stderr
    assert "one INT8 scale per row" in p.stderr.decode()
    assert not out.exists()


# K-quants and Q5_0 / Q5_1 on their own grids (src/quant/gguf_grid.h), GPTQ computed against
# them: the rules name GGUF types, and rows that do not divide into 256 fall back as
# llama-quantize's do (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0). SmolLM2's only 256-divisible
# matrices are ffn_down (1536 inputs).
K_RECIPE = """name: k-quants
rules:
  - {match: "blk.0.ffn_down.weight", type: q5_k}
  - {match: "blk.1.ffn_down.weight", type: q6_k}
  - {match: "blk.*.ffn_down.weight", type: q4_k}
  - {match: "blk.*.ffn_up.weight", type: q5_1}
  - {match: "blk.*.ffn_gate.weight", type: q5_0}
  - {match: "blk.*.attn_*.weight", type: q4_k}
  - {match: "token_embd.weight", type: q6_k}
"""


@pytest.fixture(scope="module")
def k_file(frugal, smollm2_gguf, tmp_path_factory):
    d = tmp_path_factory.mktemp("ktargets")
    recipe = d / "k.yaml"
    recipe.write_text(K_RECIPE)
    out = d / "k.gguf"
    p = frugal.ok("quantize", "-q", "-m", smollm2_gguf, "-o", out, "--json", "--method", "gptq",
                  "--calib", Path(__file__).parent.parent / "data" / "calib_cs.jsonl",
                  "--calib-samples", "2", "--seq-len", "64", "--target", "llama.cpp",
                  "--recipe", recipe, "--no-gate", timeout=600)
    return out, json.loads(p.stdout)


def test_k_quant_target_types_and_report(k_file):
    path, report = k_file
    Q = gguf.GGMLQuantizationType
    r = gguf.GGUFReader(path)
    types = {t.name: t.tensor_type for t in r.tensors}
    assert types["blk.0.ffn_down.weight"] == Q.Q5_K
    assert types["blk.1.ffn_down.weight"] == Q.Q6_K
    assert types["blk.7.ffn_down.weight"] == Q.Q4_K
    assert types["blk.3.ffn_up.weight"] == Q.Q5_1
    assert types["blk.3.ffn_gate.weight"] == Q.Q5_0
    assert types["blk.3.attn_q.weight"] == Q.Q5_0  # 576 inputs: Q4_K's fallback
    assert types["token_embd.weight"] == Q.Q8_0  # Q6_K's fallback
    assert set(types.values()) <= {Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.F32}
    assert r.fields["general.file_type"].parts[-1][0] == 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    keys = {f.name for f in r.fields.values()}
    assert "frugal.format_version" not in keys
    # The report names the types as the file holds them, and says why a rule fell back.
    by_name = {t["name"]: t for t in report["tensors"]}
    assert by_name["token_embd.weight"]["type"] == "Q8_0"
    assert "not a multiple of 256" in by_name["blk.3.attn_q.weight"]["note"]
    assert report["method"] == "gptq" and report["calib_tokens"] == 128


def test_k_quant_blocks_read_the_same_in_gguf_and_frugal(frugal, k_file, tmp_path):
    """gguf's dequantizer (llama.cpp's Python reader) and Frugal's read every block type of the
    file to the same floats: the blocks are laid out as ggml lays them."""
    path, _ = k_file
    by_name = {t.name: t for t in gguf.GGUFReader(path).tensors}
    for name in ["blk.0.ffn_down.weight", "blk.1.ffn_down.weight", "blk.7.ffn_down.weight",
                 "blk.3.ffn_up.weight", "blk.3.ffn_gate.weight", "blk.3.attn_q.weight"]:
        t = by_name[name]
        got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1).astype(np.float32)
        want = frugal.dequant(path, name, tmp_path)
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert np.abs(got).max() > 0


def test_k_quant_gptq_beats_rtn_on_the_same_grid(frugal, smollm2_gguf, k_file, tmp_path):
    """The same recipe by RTN: GPTQ's file is nearer the source model (KL divergence of the next-
    token distributions), so the error feedback works on these grids."""
    _, gptq = k_file
    recipe = tmp_path / "k.yaml"
    recipe.write_text(K_RECIPE)
    rtn = quantize(frugal, smollm2_gguf, tmp_path / "rtn.gguf", "--target", "llama.cpp",
                   "--recipe", recipe)
    g = {t["name"]: t for t in gptq["tensors"]}
    assert rtn["method"] == "rtn"
    # Frugal's logits of each file against the source model's: KL divergence per position.
    tokens = [1, 504, 3458, 282, 4649, 314, 260, 1953, 30, 2, 17, 905]
    ref = frugal.logits(smollm2_gguf, tokens, tmp_path)

    def kl(path):
        lg = frugal.logits(path, tokens, tmp_path)
        p = np.exp(ref - ref.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        lq = lg - lg.max(-1, keepdims=True)
        lq -= np.log(np.exp(lq).sum(-1, keepdims=True))
        lp = np.log(p)
        return float((p * (lp - lq)).sum(-1).mean())

    kl_gptq, kl_rtn = kl(k_file[0]), kl(tmp_path / "rtn.gguf")
    assert kl_gptq < 0.9 * kl_rtn, (kl_gptq, kl_rtn)
    assert g["blk.7.ffn_down.weight"]["rel_error"] > 0


def test_llama_server_loads_the_k_quant_file(k_file, llama_server_bin, tmp_path):  # noqa: F811
    server = LlamaServer(k_file[0], tmp_path / "llama-server.log").start()
    try:
        r = httpx.post(server.url + "/v1/chat/completions", timeout=120, json={
            "model": LLAMA_MODEL, "max_tokens": 16, "temperature": 0,
            "messages": [{"role": "user", "content": "How much does shipping cost?"}]})
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"].strip()
    finally:
        server.stop()
