#!/usr/bin/env python3
"""`frugal quantize` at the shapes people deploy: time per layer and peak RSS (issue 48).

Makes a synthetic GGUF with a real model's layer shape (Llama-3.1-8B or -70B: width, FFN, heads,
KV heads), N layers, random F16 weights (rows ~ N(0, 1/in)), tied embeddings, and SmolLM2's
tokenizer (copied from models/smollm2-135m-instruct, so the calibration text tokenizes as it
would for a real model), then runs `frugal quantize` on it once per thread count and reports:

- the time of each layer (from the moment the quantizer's progress line for layer i appears to
  the next one), the whole run's wall time;
- the peak RSS of the process (getrusage of the child: ru_maxrss);
- the machine's load average before and after, since the machine may be shared.

    .venv/bin/python bench/quant_scale.py --shape 70b --layers 1 --threads 1,2 \\
        --calib-samples 8 --out-dir /tmp/qscale

The synthetic file is written tensor by tensor (one tensor in memory at a time) and kept in
--out-dir for reuse (same shape, layers and seed: not made again).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOL = os.path.join(ROOT, "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf")

# Layer shapes of the published configs (config.json of meta-llama/Llama-3.1-8B and -70B).
SHAPES = {
    "8b": dict(n_embd=4096, n_ff=14336, n_head=32, n_head_kv=8, rope_theta=500000.0),
    "70b": dict(n_embd=8192, n_ff=28672, n_head=64, n_head_kv=8, rope_theta=500000.0),
    # a small one for a quick check of the script itself
    "tiny": dict(n_embd=512, n_ff=1536, n_head=8, n_head_kv=2, rope_theta=500000.0),
}


def write_synthetic(path: str, shape: str, layers: int, seed: int) -> dict:
    import gguf

    spec = dict(SHAPES[shape])
    d, ff, nh, nkv = spec["n_embd"], spec["n_ff"], spec["n_head"], spec["n_head_kv"]
    hd = d // nh
    src = gguf.GGUFReader(SMOL)
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"synthetic-llama-3.1-{shape}-shape-{layers}L")
    w.add_context_length(8192)
    w.add_embedding_length(d)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(spec["rope_theta"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)  # mostly F16
    f = src.fields
    tokens = f["tokenizer.ggml.tokens"].contents()
    vocab = len(tokens)
    w.add_vocab_size(vocab)
    w.add_tokenizer_model(f["tokenizer.ggml.model"].contents())
    w.add_tokenizer_pre(f["tokenizer.ggml.pre"].contents())
    w.add_token_list(tokens)
    w.add_token_types(f["tokenizer.ggml.token_type"].contents())
    w.add_token_merges(f["tokenizer.ggml.merges"].contents())
    w.add_bos_token_id(f["tokenizer.ggml.bos_token_id"].contents())
    w.add_eos_token_id(f["tokenizer.ggml.eos_token_id"].contents())
    w.add_unk_token_id(f["tokenizer.ggml.unknown_token_id"].contents())
    w.add_pad_token_id(f["tokenizer.ggml.padding_token_id"].contents())
    w.add_add_bos_token(False)
    w.add_chat_template(f["tokenizer.chat_template"].contents())

    # (name, [rows, cols]) for matrices, (name, [n]) for norms; GGUF order as llama.cpp writes.
    tensors = [("token_embd.weight", [vocab, d])]
    for l in range(layers):
        p = f"blk.{l}."
        tensors += [(p + "attn_norm.weight", [d]), (p + "attn_q.weight", [nh * hd, d]),
                    (p + "attn_k.weight", [nkv * hd, d]), (p + "attn_v.weight", [nkv * hd, d]),
                    (p + "attn_output.weight", [d, nh * hd]), (p + "ffn_norm.weight", [d]),
                    (p + "ffn_gate.weight", [ff, d]), (p + "ffn_up.weight", [ff, d]),
                    (p + "ffn_down.weight", [d, ff])]
    tensors.append(("output_norm.weight", [d]))
    for name, shp in tensors:
        if len(shp) == 1:
            w.add_tensor_info(name, shp, np.dtype(np.float32), shp[0] * 4)
        else:
            w.add_tensor_info(name, shp, np.dtype(np.float16), shp[0] * shp[1] * 2,
                              raw_dtype=gguf.GGMLQuantizationType.F16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for name, shp in tensors:
        if len(shp) == 1:
            w.write_tensor_data(np.ones(shp[0], dtype=np.float32))
            continue
        rows, cols = shp
        a = np.empty((rows, cols), dtype=np.float16)
        step = max(1, (1 << 24) // cols)  # 16M floats at a time
        sigma = 1.0 / np.sqrt(cols) if name != "token_embd.weight" else 1.0
        for r in range(0, rows, step):
            chunk = rng.standard_normal((min(step, rows - r), cols), dtype=np.float32)
            a[r:r + step] = chunk * np.float32(sigma)
        w.write_tensor_data(a)
        del a
    w.close()
    params = sum(int(np.prod(s)) for _, s in tensors)
    return dict(spec, layers=layers, vocab=vocab, params=params)


def hf_tensor_list(spec: dict, layers: int, vocab: int) -> list:
    """(HF name, shape) in the order transformers' checkpoints list them; untied lm_head as
    Llama-3.1 has."""
    d, ff, nh, nkv = spec["n_embd"], spec["n_ff"], spec["n_head"], spec["n_head_kv"]
    hd = d // nh
    t = [("model.embed_tokens.weight", [vocab, d])]
    for l in range(layers):
        p = f"model.layers.{l}."
        t += [(p + "input_layernorm.weight", [d]),
              (p + "self_attn.q_proj.weight", [nh * hd, d]),
              (p + "self_attn.k_proj.weight", [nkv * hd, d]),
              (p + "self_attn.v_proj.weight", [nkv * hd, d]),
              (p + "self_attn.o_proj.weight", [d, nh * hd]),
              (p + "post_attention_layernorm.weight", [d]),
              (p + "mlp.gate_proj.weight", [ff, d]), (p + "mlp.up_proj.weight", [ff, d]),
              (p + "mlp.down_proj.weight", [d, ff])]
    t += [("model.norm.weight", [d]), ("lm_head.weight", [vocab, d])]
    return t


def write_synthetic_hf(folder: str, shape: str, layers: int, seed: int,
                       shard_bytes: int = 5 * 10**9) -> dict:
    """A Hugging Face folder as people download it: config.json, BF16 safetensors in shards of at
    most shard_bytes (model-0000N-of-0000M.safetensors + model.safetensors.index.json),
    tokenizer.json (SmolLM2's byte-level BPE). Written tensor by tensor, one at a time in memory."""
    sys.path.insert(0, os.path.join(ROOT, "tests/python"))
    import gguf
    import ref_tokenizers
    from synth import f32_to_bf16_bits

    spec = dict(SHAPES[shape])
    src = gguf.GGUFReader(SMOL)
    field = lambda k: src.fields[k].contents()  # noqa: E731
    vocab = len(field("tokenizer.ggml.tokens"))
    tensors = hf_tensor_list(spec, layers, vocab)
    shards, cur, size = [], [], 0
    for name, shp in tensors:
        nbytes = int(np.prod(shp)) * 2
        if cur and size + nbytes > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shp))
        size += nbytes
    shards.append(cur)
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    weight_map, total = {}, 0
    n = len(shards)
    for i, part in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        header, off = {}, 0
        for name, shp in part:
            nb = int(np.prod(shp)) * 2
            header[name] = {"dtype": "BF16", "shape": shp, "data_offsets": [off, off + nb]}
            off += nb
            weight_map[name] = fname
        total += off
        header["__metadata__"] = {"format": "pt"}
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * ((8 - len(h) % 8) % 8)
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(len(h).to_bytes(8, "little"))
            f.write(h)
            for name, shp in part:
                if len(shp) == 1:
                    f.write(f32_to_bf16_bits(np.ones(shp[0], np.float32)).tobytes())
                    continue
                rows, cols = shp
                sigma = 1.0 if name == "model.embed_tokens.weight" else 1.0 / np.sqrt(cols)
                step = max(1, (1 << 24) // cols)
                for r in range(0, rows, step):
                    chunk = rng.standard_normal((min(step, rows - r), cols), dtype=np.float32)
                    f.write(f32_to_bf16_bits(chunk * np.float32(sigma)).tobytes())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    d, nh = spec["n_embd"], spec["n_head"]
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab,
        "hidden_size": d, "intermediate_size": spec["n_ff"], "num_hidden_layers": layers,
        "num_attention_heads": nh, "num_key_value_heads": spec["n_head_kv"],
        "head_dim": d // nh, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
        "rope_theta": spec["rope_theta"], "hidden_act": "silu", "tie_word_embeddings": False,
        "bos_token_id": int(field("tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(field("tokenizer.ggml.eos_token_id")),
        "attention_bias": False, "mlp_bias": False, "torch_dtype": "bfloat16",
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    ref_tokenizers.bpe_from_gguf(SMOL).save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": field("tokenizer.chat_template"),
                   "tokenizer_class": "GPT2Tokenizer"}, f)
    params = sum(int(np.prod(s)) for _, s in tensors)
    return dict(spec, layers=layers, vocab=vocab, params=params, shards=n, source="hf-bf16")


def run_quantize(frugal: str, model: str, out: str, threads: int, args, gguf_out: str) -> dict:
    cmd = [frugal, "quantize", "-m", model, "-o", out, "--method", args.method,
           "--calib", args.calib, "--calib-samples", str(args.calib_samples), "--no-gate",
           "-t", str(threads), "--json", "--target", args.target] + args.extra
    if args.target == "vllm":
        cmd += ["--frugal-gguf", gguf_out]
    load_before = os.getloadavg()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stamps = []  # (seconds since start, stderr line)
    for line in p.stderr:
        stamps.append((time.monotonic() - t0, line.rstrip("\n")))
        if args.verbose:
            print(f"  [{stamps[-1][0]:8.1f}s] {line.rstrip()}", file=sys.stderr, flush=True)
    stdout = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    rc = os.waitstatus_to_exitcode(status)
    # Layer i runs from its progress line ("layer i/N") to the next progress line.
    marks = [(t, l) for t, l in stamps if l.startswith("quantize [")]
    layer_s = []
    for (t, l), nxt in zip(marks, marks[1:] + [(wall, "")]):
        if " layer " in l:
            layer_s.append(round(nxt[0] - t, 1))
    plan = [l for _, l in stamps if l.startswith("plan:")]
    return dict(threads=threads, rc=rc, wall_s=round(wall, 1), layer_s=layer_s,
                peak_rss_gb=round(ru.ru_maxrss / 1e6, 2), user_s=round(ru.ru_utime, 1),
                sys_s=round(ru.ru_stime, 1), cpu_s=round(ru.ru_utime + ru.ru_stime, 1),
                load_before=[round(x, 2) for x in load_before],
                load_after=[round(x, 2) for x in os.getloadavg()], plan=plan,
                stderr_tail=[l for _, l in stamps[-3:]] if rc != 0 else [],
                report=json.loads(stdout) if rc == 0 and stdout.strip().startswith("{") else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="70b")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--threads", default="2", help="comma-separated thread counts, one run each")
    ap.add_argument("--method", default="gptq")
    ap.add_argument("--calib", default=os.path.join(ROOT, "tests/data/calib_cs.jsonl"))
    ap.add_argument("--calib-samples", type=int, default=8)
    ap.add_argument("--frugal", default=os.path.join(ROOT, "build/frugal"))
    ap.add_argument("--out-dir", default="/tmp/quant_scale")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-output", action="store_true", help="keep the quantized files")
    ap.add_argument("--verbose", action="store_true", help="echo frugal's stderr, timestamped")
    ap.add_argument("--source", choices=("gguf", "hf"), default="gguf",
                    help="the synthetic input: one F16 GGUF, or a Hugging Face folder of BF16 "
                    "safetensors shards (5 GB each, as Llama-3.1 ships)")
    ap.add_argument("--target", choices=("frugal", "llama.cpp", "vllm"), default="frugal",
                    help="vllm (needs --source hf) also keeps the run's Frugal GGUF (--frugal-gguf)")
    ap.add_argument("--check", action="store_true",
                    help="after each run: `frugal info` and a few tokens of `frugal generate` on the "
                    "GGUF, and for vllm every shard read back by the tests' numpy reader, its "
                    "layers compared with the GGUF's (implies --keep-output while checking)")
    ap.add_argument("extra", nargs="*", help="more `frugal quantize` flags (after --)")
    args = ap.parse_args()
    if args.target == "vllm" and args.source != "hf":
        ap.error("--target vllm quantizes a Hugging Face folder: add --source hf")
    os.makedirs(args.out_dir, exist_ok=True)
    suffix = "-hf" if args.source == "hf" else ".gguf"
    model = os.path.join(args.out_dir, f"synth-{args.shape}-{args.layers}L-s{args.seed}{suffix}")
    meta_path = model + ".json"
    if not (os.path.exists(model) and os.path.exists(meta_path)):
        t0 = time.monotonic()
        if args.source == "hf":
            if os.path.exists(model + ".tmp"):
                shutil.rmtree(model + ".tmp")
            meta = write_synthetic_hf(model + ".tmp", args.shape, args.layers, args.seed)
        else:
            meta = write_synthetic(model + ".tmp", args.shape, args.layers, args.seed)
        os.replace(model + ".tmp", model)
        meta["write_s"] = round(time.monotonic() - t0, 1)
        with open(meta_path, "w") as fh:
            json.dump(meta, fh)
    with open(meta_path) as fh:
        meta = json.load(fh)
    runs = []
    for t in [int(x) for x in args.threads.split(",")]:
        stem = os.path.join(args.out_dir, f"q-{args.shape}-{args.layers}L-t{t}")
        gguf_out = stem + ".gguf"
        out = stem + "-vllm" if args.target == "vllm" else gguf_out
        for old in (out, gguf_out):
            if os.path.isdir(old):
                shutil.rmtree(old)
            elif os.path.exists(old):
                os.remove(old)
        r = run_quantize(args.frugal, model, out, t, args, gguf_out)
        if r["report"] is not None:  # the tensor list is long; keep the summary
            r["report"] = {k: v for k, v in r["report"].items() if k != "tensors"}
        if r["rc"] == 0:
            r["output_bytes"] = {os.path.basename(p): tree_bytes(p) for p in {out, gguf_out}}
            if args.check:
                r["check"] = check_outputs(args, gguf_out, out if args.target == "vllm" else None)
        if not args.keep_output:
            for p in {out, gguf_out}:
                if os.path.isdir(p):
                    shutil.rmtree(p)
                elif os.path.exists(p):
                    os.remove(p)
        runs.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "report"}), flush=True)
    result = dict(model=meta, cpu=cpu_name(), nproc=os.cpu_count(), method=args.method,
                  calib_samples=args.calib_samples, runs=runs)
    with open(os.path.join(args.out_dir, f"result-{args.shape}-{args.layers}L.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    return 0 if all(r["rc"] == 0 for r in runs) else 1


def tree_bytes(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def check_outputs(args, gguf_out: str, vllm_dir: str | None) -> dict:
    """What a user does next with the files: `frugal info`, `frugal generate` on the GGUF; for the
    vLLM folder, the tests' independent numpy reader (index, shards, GPTQ v1 layout) and its
    dequantized layers against Frugal's own dequantization of the same run's GGUF."""
    res = {}
    t0 = time.monotonic()
    p = subprocess.run([args.frugal, "info", gguf_out], capture_output=True, text=True)
    res["info_rc"] = p.returncode
    res["info"] = [l for l in p.stdout.splitlines() if l.strip()][:6]
    p = subprocess.run([args.frugal, "generate", "-m", gguf_out, "-p", "The order ships",
                        "-n", "8", "-t", "2", "--temperature", "0"], capture_output=True, text=True)
    res["generate_rc"] = p.returncode
    res["generate_tail"] = (p.stdout + p.stderr).strip().splitlines()[-3:]
    res["gguf_check_s"] = round(time.monotonic() - t0, 1)
    if vllm_dir is None:
        return res
    t0 = time.monotonic()
    sys.path.insert(0, os.path.join(ROOT, "tests/python"))
    from pathlib import Path

    import ref_llama
    import test_quantize_vllm as tv
    st = tv.load_folder(Path(vllm_dir))  # asserts the index names every tensor of every shard once
    qc = json.load(open(os.path.join(vllm_dir, "config.json")))["quantization_config"]
    res["vllm_tensors"] = len(st)
    res["vllm_shards"] = len([f for f in os.listdir(vllm_dir) if f.endswith(".safetensors")])
    nh, nkv = SHAPES[args.shape]["n_head"], SHAPES[args.shape]["n_head_kv"]
    compared, max_diff = 0, 0.0
    layers = sorted({0, args.layers // 2, args.layers - 1})
    for l in layers:
        for module, gname, heads in (("self_attn.q_proj", "attn_q", nh),
                                     ("self_attn.k_proj", "attn_k", nkv),
                                     ("mlp.down_proj", "ffn_down", 0)):
            prefix = f"model.layers.{l}.{module}"
            ov = tv.dynamic_override(qc, prefix)
            bits = ov.get("bits", qc["bits"]) if isinstance(ov, dict) else qc["bits"]
            w = tv.gptq_dequant(st, prefix, bits)
            if heads:  # the GGUF holds Q/K in llama.cpp's row order
                w = ref_llama.permute_qk_for_gguf(w, heads)
            tmp = os.path.join(args.out_dir, "dequant.f32")
            q = subprocess.run([args.frugal, "dequant", "-m", gguf_out, "--tensor",
                                f"blk.{l}.{gname}.weight", "-o", tmp], capture_output=True, text=True)
            if q.returncode != 0:
                raise SystemExit(f"frugal dequant failed: {q.stderr.strip()}")
            g = np.fromfile(tmp, dtype=np.float32).reshape(w.shape)
            os.remove(tmp)
            max_diff = max(max_diff, float(np.max(np.abs(g - w))))
            compared += 1
    res["vllm_vs_gguf"] = dict(layers=layers, tensors=compared, max_abs_diff=max_diff)
    res["vllm_check_s"] = round(time.monotonic() - t0, 1)
    if max_diff != 0.0:
        raise SystemExit(f"the vLLM folder's weights differ from the GGUF's by {max_diff}")
    return res


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


if __name__ == "__main__":
    sys.exit(main())
