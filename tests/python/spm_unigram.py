"""Builds XLM-R-style Unigram tokenizer.json files for the tests, from a SentencePiece model
trained here (the `sentencepiece` package) on a small English + Chinese corpus.

The layout is what Hugging Face's XLMRobertaConverter writes for xlm-roberta, bge-m3 and
multilingual-e5: vocabulary <s> <pad> </s> <unk>, the SentencePiece pieces from id 4 on, then
<mask>; unk_id 3; the model's own compiled normalisation rules (nmt_nfkc) as the Precompiled
normalizer; Metaspace; "<s> $A </s>". Variants cover the pre-tokenizer layouts found in
published files.
"""

from __future__ import annotations

import json
from pathlib import Path

VARIANTS = ("xlmr-2020", "bge-m3", "strip", "byte-fallback")


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def _fields(buf: bytes):
    """(field number, wire type, value) of a protobuf message; value is bytes for wire type 2."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
        yield field, wire, v


def precompiled_charsmap(model_file: Path) -> bytes:
    """ModelProto.normalizer_spec (field 3) . precompiled_charsmap (field 2)."""
    for field, _, v in _fields(model_file.read_bytes()):
        if field == 3:
            for f2, _, v2 in _fields(v):
                if f2 == 2:
                    return bytes(v2)
    raise ValueError(f"{model_file} has no precompiled charsmap")


def training_lines(root: Path) -> list[str]:
    from test_tokenizer_reference import TEXTS, corpus

    lines = corpus(3000, seed=11) + [t for t in TEXTS if t.strip()]
    for line in (root / "tests" / "data" / "cache_pairs.jsonl").read_text().splitlines():
        if line.strip():
            p = json.loads(line)
            lines += [p["a"], p["b"]]
    return lines


def build(variant: str, out_dir: Path, root: Path) -> Path:
    import sentencepiece as spm
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    assert variant in VARIANTS, variant
    out_dir.mkdir(parents=True, exist_ok=True)
    text = out_dir / "corpus.txt"
    text.write_text("\n".join(training_lines(root)) + "\n")
    byte_fallback = variant == "byte-fallback"
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(out_dir / "spm"), vocab_size=1200, model_type="unigram",
        character_coverage=0.995, normalization_rule_name="nmt_nfkc", byte_fallback=byte_fallback,
        num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(out_dir / "spm.model"))
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(sp.id_to_piece(i), sp.get_score(i)) for i in range(3, sp.get_piece_size())]
    vocab += [("<mask>", 0.0)]

    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=byte_fallback))
    charsmap = normalizers.Precompiled(precompiled_charsmap(out_dir / "spm.model"))
    if variant == "strip":  # transformers' newer SpmConverter
        tok.normalizer = normalizers.Sequence([
            charsmap, normalizers.Strip(left=False, right=True), normalizers.Replace(Regex(" {2,}"), "▁")])
    else:
        tok.normalizer = normalizers.Sequence([charsmap, normalizers.Replace(Regex(" {2,}"), " ")])
    if variant == "xlmr-2020":  # xlm-roberta-base's tokenizer.json
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    if byte_fallback:  # <0xNN> runs back to characters first
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), tok.decoder])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    path = out_dir / "tokenizer.json"
    tok.save(str(path))
    (out_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
         "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}))
    return path
