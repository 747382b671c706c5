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
