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


def load_folder(folder: Path) -> dict:
    """The folder's weights, as transformers finds them: model.safetensors alone, or the shards that
    model.safetensors.index.json names. The index must name every tensor of every shard exactly
    once, in the shard that holds it, list no file that is not there, and its total_size must be
    the tensors' bytes."""
    index = folder / "model.safetensors.index.json"
    if not index.exists():
        assert not list(folder.glob("model-*-of-*.safetensors"))
        return load_file(str(folder / "model.safetensors"))
    assert not (folder / "model.safetensors").exists()
    j = json.loads(index.read_text())
    assert set(j) == {"metadata", "weight_map"}
    weight_map = j["weight_map"]
    files = sorted(set(weight_map.values()))
    n = len(files)
    assert n > 1
    assert files == [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    assert sorted(p.name for p in folder.glob("*.safetensors")) == files
    out, total = {}, 0
    for f in files:
        shard = load_file(str(folder / f))
        assert shard, f
        for name, a in shard.items():
            assert name not in out, f"{name} in two shards"
            assert weight_map[name] == f, (name, f)
            out[name] = a
            total += a.nbytes
    assert set(out) == set(weight_map)
    assert j["metadata"]["total_size"] == total
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
    st = load_folder(out)
    src = load_folder(hf)
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


def test_shards_hold_the_same_tensors(frugal, tmp_path):
    """--shard-size small enough for several shards: the folder holds the same tensors, byte for
    byte, as the single model.safetensors of the same run, and the same weights as the run's
    Frugal GGUF (check_folder, through the index)."""
    hf, one, sharded, gg = tmp_path / "hf", tmp_path / "one", tmp_path / "sharded", tmp_path / "f.gguf"
    spec = synth.write_hf_llama(str(hf), model_type="llama", dtype="BF16", tied=False, seed=4,
                                shards=2, **DIMS)
    quantize(frugal, hf, one, "--method", "rtn", "--no-gate")
    p = quantize(frugal, hf, sharded, "--method", "rtn", "--no-gate", "--shard-size", "100kB",
                 "--frugal-gguf", gg)
    check_folder(frugal, hf, sharded, gg, spec, "llama", tmp_path, MIXED)
    a, b = load_folder(one), load_folder(sharded)
    assert (one / "model.safetensors").exists()
    assert set(a) == set(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and np.array_equal(a[name].view(np.uint8), b[name].view(np.uint8)), name
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    r = json.loads(p.stdout)
    assert r["vllm"]["shards"] == len(shards) >= 3
    assert r["vllm"]["safetensors_bytes"] == sum((sharded / f).stat().st_size for f in shards)
    # Each shard within the size, unless it is one tensor larger than the size.
    for f in shards:
        names = [n for n, s in index["weight_map"].items() if s == f]
        assert sum(b[n].nbytes for n in names) <= 100_000 or len(names) == 1, f
    # The source's weights were sharded too and are not copied.
    assert not list(sharded.glob("*.bin"))


def test_bad_shard_size_is_refused(frugal, tmp_path):
    hf = tmp_path / "hf"
    synth.write_hf_llama(str(hf), model_type="llama", dtype="F32", seed=1, **DIMS)
    out = tmp_path / "out"
    for size in ("0", "garbage", "-5GB", "5XB", "0MB"):
        p = quantize(frugal, hf, out, "--method", "rtn", "--no-gate", "--shard-size", size, check=False)
        err = p.stderr.decode()
        assert p.returncode == 2 and "--shard-size" in err and err.count("\n") == 1, (size, err)
        assert not out.exists()
    gguf_out = tmp_path / "x.gguf"
    p = frugal.run("quantize", "-q", "-m", hf, "-o", gguf_out, "--method", "rtn", "--no-gate",
                   "--shard-size", "5GB", timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 2 and "--target vllm" in err and err.count("\n") == 1, err
    assert not gguf_out.exists()


def write_smollm2_hf(gguf_path: Path, folder: Path) -> dict:
    """SmolLM2-135M-Instruct as a Hugging Face folder (F16 safetensors, config.json,
    tokenizer.json), from the shipped GGUF: its Q4_1 weights dequantized (exact in F16 but for
    rounding of d*q + m), Q/K rows back in transformers' order (llama.cpp's converter permuted
    them for arch llama)."""
    import gguf
    from gguf import GGUFReader

    import ref_tokenizers

    r = GGUFReader(str(gguf_path))
    field = lambda k: r.fields[k].contents()  # noqa: E731
    n_head, n_head_kv = int(field("llama.attention.head_count")), int(field("llama.attention.head_count_kv"))
    gguf_to_hf = {v: k for k, v in ref_llama.HF_TO_GGUF.items()}
    t = {}
    for x in r.tensors:
        a = gguf.quants.dequantize(np.asarray(x.data), x.tensor_type)
        a = np.ascontiguousarray(a.reshape(tuple(int(s) for s in reversed(x.shape.tolist()))))
        name = x.name.removesuffix(".weight")
        if name == "token_embd":
            hf_name = "model.embed_tokens.weight"
        elif name == "output_norm":
            hf_name = "model.norm.weight"
        elif name == "output":
            hf_name = "lm_head.weight"
        else:
            blk, l, kind = name.split(".", 2)
            hf_name = f"model.layers.{l}.{gguf_to_hf[kind]}.weight"
            if kind in ("attn_q", "attn_k"):  # undo permute_qk_for_gguf
                heads = n_head if kind == "attn_q" else n_head_kv
                idx = np.arange(a.shape[0])
                perm = ref_llama.permute_qk_for_gguf(idx.reshape(-1, 1), heads).reshape(-1)
                back = np.empty_like(a)
                back[perm] = a
                a = back
        t[hf_name] = a.astype(np.float32)
    folder.mkdir(parents=True)
    synth.write_safetensors(str(folder / "model.safetensors"), t, "F16")
    n_layer = int(field("llama.block_count"))
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": int(t["model.embed_tokens.weight"].shape[0]),
        "hidden_size": int(field("llama.embedding_length")),
        "intermediate_size": int(field("llama.feed_forward_length")),
        "num_hidden_layers": n_layer, "num_attention_heads": n_head, "num_key_value_heads": n_head_kv,
        "max_position_embeddings": int(field("llama.context_length")),
        "rms_norm_eps": float(field("llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field("llama.rope.freq_base")), "hidden_act": "silu",
        "tie_word_embeddings": "lm_head.weight" not in t,
        "bos_token_id": int(field("tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(field("tokenizer.ggml.eos_token_id")),
        "attention_bias": False, "mlp_bias": False, "torch_dtype": "float16",
    }
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    ref_tokenizers.bpe_from_gguf(str(gguf_path)).save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": field("tokenizer.chat_template"), "tokenizer_class": "GPT2Tokenizer"}))
    return {"n_layer": n_layer, "n_head": n_head, "n_head_kv": n_head_kv}


def test_smollm2_in_shards(frugal, smollm2_gguf, tmp_path):
    """A real model's folder in shards (issue 48): SmolLM2-135M (as an HF folder from the shipped
    GGUF), GPTQ on a few calibration windows, --shard-size 20MB: several shards and the index,
    read back by the numpy reader (load_folder: every tensor in exactly one shard, total_size
    right), every Linear of every layer present, and the first and last layers' Linears equal to
    the run's Frugal GGUF bit for bit."""
    hf, out, gg = tmp_path / "hf", tmp_path / "out", tmp_path / "frugal.gguf"
    spec = write_smollm2_hf(smollm2_gguf, hf)
    calib = tmp_path / "calib.txt"
    calib.write_text(CALIB)
    p = quantize(frugal, hf, out, "--method", "gptq", "--calib", calib, "--calib-samples", "2",
                 "--seq-len", "32", "--no-gate", "--shard-size", "20MB", "--frugal-gguf", gg)
    st = load_folder(out)
    index = json.loads((out / "model.safetensors.index.json").read_text())
    n = len(set(index["weight_map"].values()))
    assert n >= 4, n
    assert json.loads(p.stdout)["vllm"]["shards"] == n
    src = load_folder(hf)
    linears = [f"model.layers.{l}.{b}.{x}" for l in range(spec["n_layer"]) for b, xs in LINEARS.items() for x in xs]
    want = {m + s for m in linears for s in (".qweight", ".qzeros", ".scales", ".g_idx")}
    want |= {k for k in src if not any(k == m + ".weight" for m in linears)}
    assert set(st) == want
    for l in (0, spec["n_layer"] - 1):
        for b, xs in LINEARS.items():
            for x in xs:
                module = f"model.layers.{l}.{b}.{x}"
                bits = 8 if b == "self_attn" else 4  # the mixed preset
                got = gptq_dequant(st, module, bits)
                ref = ref_llama.permute_qk_for_gguf(got, spec["n_head"] if x == "q_proj" else spec["n_head_kv"]) \
                    if x in ("q_proj", "k_proj") else got
                np.testing.assert_array_equal(ref, frugal.dequant(gg, gguf_name(module), tmp_path).reshape(got.shape),
                                              err_msg=module)
                w = src[module + ".weight"].astype(np.float32)
                assert np.linalg.norm(got - w) < 0.2 * np.linalg.norm(w), module
    for k in ("model.embed_tokens.weight", "model.norm.weight"):
        assert np.array_equal(st[k].view(np.uint8), src[k].view(np.uint8)), k
