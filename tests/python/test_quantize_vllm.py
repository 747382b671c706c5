"""`frugal quantize --target vllm` (issue 27): a Hugging Face checkpoint folder in, a Hugging Face
folder in GPTQ's v1 checkpoint layout out (what vLLM and transformers load), black box.

Tiny random Llama / Qwen2 checkpoints (synth.write_hf_llama) are quantized. Every quantized
Linear of the folder is read back by the numpy reader below, written from the published format
(AutoGPTQ / GPTQModel "gptq", v1: qweight packed along the inputs, low bits first; qzeros packed
along the outputs, holding zero - 1; w = scales * (q - zero), transposed to [out, in]), and must
equal, bit for bit, Frugal's own dequantization (`frugal dequant`) of the Frugal GGUF of the
same run (`--frugal-gguf`: the very file the gate evaluates, so the gate scores exactly the
folder's weights). For arch llama that GGUF holds Q/K in llama.cpp's row order, the folder in
transformers' order: the reference permutes the folder's rows as llama.cpp's converter does.

Not here: vLLM itself (no GPU, no vLLM install), and transformers' model loading (needs torch,
optimum and gptqmodel); transformers' config parsing is checked without torch.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file as reference_load_file

import ref_llama
import synth

DIMS = dict(n_embd=192, n_head=4, n_head_kv=2, n_ff=256)  # 192 inputs: g64; ffn_down (256): g128
CALIB = "Order 1299 ships today. The price is $12.50 per item, 3 items in stock.\n" * 40


def quantize(frugal, src, out, *args, check=True):
    p = frugal.run("quantize", "-q", "-m", src, "-o", out, "--target", "vllm", "--json", *args,
                   timeout=300)
    if check:
        assert p.returncode == 0, p.stderr.decode()[-3000:]
    return p


ST_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I32": np.int32}


def load_file(path: str) -> dict:
    """A safetensors reader (the reference package's numpy reader has no bfloat16): BF16 comes back
    as its raw uint16 bits. Checks the byte ranges cover the data without holes or overlap."""
    raw = Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0  # the writer pads the header for alignment
    header = json.loads(raw[8:8 + n])
    assert header.pop("__metadata__") == {"format": "pt"}
    data = raw[8 + n:]
    spans = sorted(tuple(h["data_offsets"]) for h in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        dt = np.dtype(ST_DTYPES[h["dtype"]])
        assert b % dt.itemsize == 0, name  # aligned to its element size
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(h["shape"])
    return out


def as_f32(a: np.ndarray) -> np.ndarray:
    return (a.astype(np.uint32) << 16).view(np.float32) if a.dtype == np.uint16 else a.astype(np.float32)


def gptq_dequant(st: dict, module: str, bits: int) -> np.ndarray:
    """The published v1 layout, read independently: [out, in] float32."""
    qweight = st[module + ".qweight"].view(np.uint32)
    qzeros = st[module + ".qzeros"].view(np.uint32)
    scales = st[module + ".scales"].astype(np.float32)
    g_idx = st[module + ".g_idx"].astype(np.int64)
    pack, mask = 32 // bits, (1 << bits) - 1
    shifts = (np.arange(pack, dtype=np.uint32) * bits)
    q = (qweight[:, None, :] >> shifts[None, :, None]) & mask  # [in / pack, pack, out]
    q = q.reshape(-1, qweight.shape[1]).astype(np.float32)  # [in, out]
    z = (qzeros[:, :, None] >> shifts[None, None, :]) & mask  # [groups, out / pack, pack]
    z = z.reshape(qzeros.shape[0], -1).astype(np.float32) + 1  # v1 stores zero - 1
    w = scales[g_idx] * (q - z[g_idx])
    return np.ascontiguousarray(w.T)


def dynamic_override(qc: dict, name: str):
    """vLLM's get_dynamic_override: the first rule whose regex re.match-es the module; False for
    a negative rule; {} for none."""
    for pattern, over in qc.get("dynamic", {}).items():
        if pattern.startswith("-:"):
            if re.match(pattern[2:], name):
                return False
        elif re.match(pattern.removeprefix("+:"), name):
            return over
    return {}


LINEARS = {"self_attn": ["q_proj", "k_proj", "v_proj", "o_proj"], "mlp": ["gate_proj", "up_proj", "down_proj"]}
FUSED = {"self_attn.qkv_proj": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
         "mlp.gate_up_proj": ["mlp.gate_proj", "mlp.up_proj"]}


def gguf_name(module: str) -> str:
    l, rest = module.removeprefix("model.layers.").split(".", 1)
    return f"blk.{l}.{ref_llama.HF_TO_GGUF[rest]}.weight"


def check_folder(frugal, hf: Path, out: Path, frugal_gguf: Path, spec: dict, model_type: str,
                 tmp_path: Path, expect: dict, rescaled=False):
    """expect: HF module kind ("self_attn.q_proj") -> (bits, group, sym). rescaled: AWQ folded
    its scales into the norms and weights, so those are not the source's."""
    st = load_file(str(out / "model.safetensors"))
    src = load_file(str(hf / "model.safetensors"))
    config = json.loads((out / "config.json").read_text())
    qc = config["quantization_config"]
    assert qc == json.loads((out / "quantize_config.json").read_text())
    assert qc["quant_method"] == "gptq" and qc["checkpoint_format"] == "gptq"
    assert qc["desc_act"] is False
    assert config["torch_dtype"] == "float16"
    # Everything but the quantization config is the source's config.
    src_config = json.loads((hf / "config.json").read_text())
    assert {k: v for k, v in config.items() if k not in ("quantization_config", "torch_dtype")} == \
        {k: v for k, v in src_config.items() if k != "torch_dtype"}
    for f in ("tokenizer.json", "tokenizer_config.json"):
        assert (out / f).read_bytes() == (hf / f).read_bytes(), f

    for l in range(spec["n_layer"]):
        for block, names in LINEARS.items():
            for n in names:
                kind = f"{block}.{n}"
                module = f"model.layers.{l}.{kind}"
                bits, group, sym = expect[kind]
                assert module + ".weight" not in st
                # The config says what the file holds, as vLLM reads it (its fused names too).
                over = dynamic_override(qc, module)
                assert over is not False
                assert (over.get("bits", qc["bits"]), over.get("group_size", qc["group_size"])) == (bits, group), module
                for fused, parts in FUSED.items():
                    if kind in parts:
                        assert dynamic_override(qc, f"model.layers.{l}.{fused}") == over, fused
                rows_in = st[module + ".g_idx"].shape[0]
                assert st[module + ".qweight"].shape == (rows_in * bits // 32, st[module + ".scales"].shape[1])
                assert st[module + ".scales"].shape[0] == rows_in // group
                assert st[module + ".scales"].dtype == np.float16
                np.testing.assert_array_equal(st[module + ".g_idx"], np.arange(rows_in) // group)
                zeros = (st[module + ".qzeros"].view(np.uint32)[:, :, None]
                         >> (np.arange(32 // bits, dtype=np.uint32) * bits)) & ((1 << bits) - 1)
                if sym:
                    assert np.all(zeros == (1 << (bits - 1)) - 1), module  # zero 2^(bits-1)
                else:
                    assert zeros.min() >= 0 and zeros.max() <= 14, module  # zero in [1, 15]
                    assert len(np.unique(zeros)) > 1, module

                got = gptq_dequant(st, module, bits)
                want = frugal.dequant(frugal_gguf, gguf_name(module), tmp_path).reshape(got.shape)
                ref = got
                if model_type == "llama" and n in ("q_proj", "k_proj"):
                    ref = ref_llama.permute_qk_for_gguf(got, spec["n_head"] if n == "q_proj" else spec["n_head_kv"])
                np.testing.assert_array_equal(ref, want, err_msg=module)
                # ... and it is a quantization of this model.
                w = as_f32(src[module + ".weight"])
                assert rescaled or np.linalg.norm(got - w) < 0.2 * np.linalg.norm(w), module
    # Every other tensor as the source has it.
    for name, a in src.items():
        if any(name.endswith(f"{n}.weight") for ns in LINEARS.values() for n in ns):
            continue
        if rescaled and "layernorm" in name:
            assert st[name].dtype in (a.dtype, np.float32) and not np.array_equal(as_f32(st[name]), as_f32(a))
            continue
        assert st[name].dtype == a.dtype and np.array_equal(st[name].view(np.uint8), a.view(np.uint8)), name
    return qc


MIXED = {**{f"self_attn.{n}": (8, 64, True) for n in LINEARS["self_attn"]},
         "mlp.gate_proj": (4, 64, False), "mlp.up_proj": (4, 64, False), "mlp.down_proj": (4, 128, False)}


@pytest.mark.parametrize("model_type, dtype, tied, method", [
    ("llama", "BF16", False, "rtn"), ("qwen2", "F32", True, "gptq"), ("llama", "F16", True, "awq")])
def test_mixed_preset_folder_holds_frugals_weights(frugal, tmp_path, model_type, dtype, tied, method):
    hf, out, gg = tmp_path / "hf", tmp_path / "out", tmp_path / "frugal.gguf"
    spec = synth.write_hf_llama(str(hf), model_type=model_type, dtype=dtype, tied=tied, seed=7, **DIMS)
    (hf / "generation_config.json").write_text('{"do_sample": false}\n')
    calib = tmp_path / "calib.txt"
    calib.write_text(CALIB)
    extra = ["--calib", calib, "--calib-samples", "4", "--seq-len", "32"] if method != "rtn" else []
    p = quantize(frugal, hf, out, "--method", method, "--no-gate", "--frugal-gguf", gg, *extra)
    qc = check_folder(frugal, hf, out, gg, spec, model_type, tmp_path, MIXED, rescaled=method == "awq")
    assert (out / "generation_config.json").read_bytes() == (hf / "generation_config.json").read_bytes()
    if dtype != "BF16":  # the safetensors package reads the file (its numpy reader has no bf16)
        assert set(reference_load_file(str(out / "model.safetensors"))) == set(load_file(str(out / "model.safetensors")))
    # The FFN's asymmetric INT4 is the base (vLLM picks its kernels from the base fields), the
    # attention's INT8 and ffn_down's g128 are dynamic overrides.
    assert (qc["bits"], qc["group_size"], qc["sym"]) == (4, 64, False)
    assert len(qc["dynamic"]) == 2
    # The report names what was written.
    r = json.loads(p.stdout)
    assert r["target"] == "vllm" and r["validated"] is False
    assert r["vllm"]["formats"] == {"gptq int8 g64 sym": 8, "gptq int4 g64 asym": 4, "gptq int4 g128 asym": 2}
    by = {t["name"]: t for t in r["tensors"]}
    assert by["blk.0.attn_q.weight"]["vllm_format"] == "gptq int8 g64 sym"
    assert by["blk.1.ffn_down.weight"]["vllm_format"] == "gptq int4 g128 asym"
    assert by["token_embd.weight"]["vllm_format"] == "as in the source"
    assert by["token_embd.weight"]["type"] == dtype  # not quantized for this target
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob("*.candidate*"))


def test_symmetric_int4_and_uniform_config(frugal, tmp_path):
    """int4_sym everywhere (g128): one scheme, no dynamic rules, GPTQ sym zeros (8)."""
    hf, out, gg = tmp_path / "hf", tmp_path / "out", tmp_path / "frugal.gguf"
    spec = synth.write_hf_llama(str(hf), model_type="llama", dtype="F32", tied=False, seed=9,
                                n_embd=128, n_head=4, n_head_kv=2, n_ff=256)
    recipe = tmp_path / "sym.yaml"
    recipe.write_text('name: sym\nrules:\n  - {match: "blk.*.weight", type: int4_sym, group_size: 128}\n')
    quantize(frugal, hf, out, "--method", "rtn", "--no-gate", "--frugal-gguf", gg, "--recipe", recipe)
    expect = {f"{b}.{n}": (4, 128, True) for b, ns in LINEARS.items() for n in ns}
    qc = check_folder(frugal, hf, out, gg, spec, "llama", tmp_path, expect)
    assert (qc["bits"], qc["group_size"], qc["sym"]) == (4, 128, True)
    assert "dynamic" not in qc


def test_transformers_parses_the_config(frugal, tmp_path):
    """transformers (no torch) reads the folder's config and accepts its quantization_config.
    Its GPTQConfig (5.x) has no `dynamic` field: mixed folders are for vLLM (docs)."""
    from transformers import AutoConfig, GPTQConfig

    hf, out = tmp_path / "hf", tmp_path / "out"
    synth.write_hf_llama(str(hf), model_type="qwen2", dtype="BF16", tied=True, seed=3, **DIMS)
    quantize(frugal, hf, out, "--method", "rtn", "--no-gate")
    written = json.loads((out / "config.json").read_text())["quantization_config"]
    cfg = AutoConfig.from_pretrained(str(out))
    assert cfg.model_type == "qwen2"
    qc = cfg.quantization_config
    qc = qc if isinstance(qc, dict) else qc.to_dict()
    assert qc["dynamic"] == written["dynamic"]
    g = GPTQConfig.from_dict(qc)
    assert (g.bits, g.group_size, g.sym, g.desc_act) == (4, 64, False, False)
    assert g.to_dict()["checkpoint_format"] == "gptq"


def test_gate_checks_the_candidate_and_writes_only_on_pass(frugal, tmp_path):
    hf = tmp_path / "hf"
    synth.write_hf_llama(str(hf), model_type="llama", dtype="F32", tied=False, seed=2, **DIMS)
    text = tmp_path / "heldout.txt"
    text.write_text("The order ships today and the price is twelve dollars. " * 30)
    gate = ["--eval-text", text, "--eval-max-tokens", "64"]
    out, gg = tmp_path / "pass", tmp_path / "pass.gguf"
    p = quantize(frugal, hf, out, "--method", "rtn", "--gate", "kld<10", "--frugal-gguf", gg, *gate)
    r = json.loads(p.stdout)
    assert r["validated"] is True and (out / "model.safetensors").exists() and gg.exists()
    assert not list(tmp_path.glob("*.candidate*")) and not list(tmp_path.glob("*.tmp"))

    out = tmp_path / "fail"
    p = quantize(frugal, hf, out, "--method", "rtn", "--gate", "kld<0.0000000001", *gate, check=False)
    assert p.returncode == 3, p.stderr.decode()
    assert not out.exists() and not list(tmp_path.glob("fail*"))


def test_refusals_leave_nothing(frugal, tmp_path):
    hf = tmp_path / "hf"
    synth.write_hf_llama(str(hf), model_type="llama", dtype="F32", seed=1, **DIMS)
    gguf_file = tmp_path / "model.gguf"
    synth.write_gguf_llama(str(gguf_file), arch="llama", tied=True, **DIMS)
    out = tmp_path / "out"

    def refused(src, *args, message):
        p = quantize(frugal, src, out, "--method", "rtn", "--no-gate", *args, check=False)
        err = p.stderr.decode()
        assert p.returncode == 2, err
        assert message in err and err.count("\n") == 1, err
        assert not out.exists() and not list(tmp_path.glob("out*"))

    refused(gguf_file, message="needs a Hugging Face checkpoint folder")
    per_row = tmp_path / "per_row.yaml"
    per_row.write_text('name: r\nrules:\n  - {match: "blk.*.weight", type: int8, group_size: 0}\n')
    refused(hf, "--recipe", per_row, message="one INT8 scale per row")
    split = tmp_path / "split.yaml"  # q INT8, k and v INT4: vLLM's qkv_proj has one scheme
    split.write_text('name: s\nrules:\n  - {match: "blk.*.attn_q.weight", type: int8}\n'
                     '  - {match: "blk.*.weight", type: int4}\n')
    refused(hf, "--recipe", split, message="qkv_proj")
    kq = tmp_path / "kq.yaml"  # a GGUF block type: no GPTQ layout
    kq.write_text('name: k\nrules:\n  - {match: "blk.*.weight", type: q4_k}\n')
    refused(hf, "--recipe", kq, message="GGUF block type")
    out.mkdir()
    (out / "keep.txt").write_text("x")
    p = quantize(frugal, hf, out, "--method", "rtn", "--no-gate", check=False)
    assert p.returncode == 2 and "not an empty folder" in p.stderr.decode()
    assert (out / "keep.txt").read_text() == "x" and not (out / "model.safetensors").exists()
