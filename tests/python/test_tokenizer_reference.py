"""Token ids from `frugal tokenize` must equal the Hugging Face `tokenizers` package's.

Black box: the binary is driven through `frugal tokenize -m MODEL --jsonl` (one JSON string per
stdin line in, one JSON array of ids per line out; add_special on, parse_special off unless
--no-special / --parse-special) and `... --jsonl --decode [--skip-special]` (one JSON array of
ids in, one JSON string out) for the round trips.

Tokenizers under test:
  (a) SmolLM2-135M-Instruct's GGUF (byte-level BPE, pre-tokenizer "smollm"); the reference is
      rebuilt from the GGUF metadata by ref_tokenizers.bpe_from_gguf.
  (b) all-MiniLM-L6-v2's tokenizer.json (WordPiece); the reference loads the same file.
  (c) SentencePiece-style BPE with byte fallback, trained here with `tokenizers` and laid out
      as Llama 2's tokenizer.json is (legacy Prepend+Replace normalizer, and the Metaspace
      variants newer converters write).
  (d) byte-level BPE with Llama 3's split regex and ignore_merges, trained here.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

# ---------------------------------------------------------------------------------------------
# Test inputs

TEXTS = [
    # English
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "The capital of France is",
    "I'm sure they'll say we've done it, but he'd disagree and SHE'S RIGHT. Don't!",
    "Mr. O'Neil's cat—who's 3 years old—isn't \"happy\"; (really) [truly] {ok}?",
    # Chinese, Japanese, Korean
    "你好，世界！我们今天去公园散步吧。",
    "机器学习是人工智能的一个分支。",
    "こんにちは、世界。カタカナとひらがな。",
    "안녕하세요 세계",
    # other scripts and accents
    "Café déjà vu, naïve façade, crème brûlée.",
    "Ελληνικά: Σίσυφος ΣΑΣ",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "İstanbul ﬁ ligature Ⅻ ½ ² ٣",
    "e\u0301 combining vs \u00e9 precomposed",
    # code
    "def foo(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    '{"key": [1, 2.5, null], "nested": {"a": "b"}}',
    "<div class=\"main\">&nbsp;</div>",
    "SELECT * FROM users WHERE id = 42;",
    # numbers
    "1299",
    "$1,234.56",
    "3.14159",
    "1e-10 and 6.022e23",
    "2024-01-15T12:34:56Z",
    "100000000000 12345678901234567890",
    "Call 555-0123 or +1 (800) 555-0199.",
    # emoji, including ZWJ sequences, skin tones, flags and variation selectors
    "Hello 👋🏽 world 🌍",
    "👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👩🏾‍💻 coder",
    "🇫🇷🇩🇪🇯🇵 ❤️ ✨ 🥲 🫠",
    # whitespace
    "  leading spaces",
    "trailing spaces   ",
    "a\n\nb",
    "\t\ttabs\tand spaces  \n",
    "line1\r\nline2\r\n",
    "   \n\n   ",
    " ",
    "\n",
    "",
    "multiple     spaces    between     words",
    "a\u00a0b non-breaking, a\u3000b ideographic, a\u2009b thin",
    "x\u0085y next-line, a\u200bb zero-width",
    "ctrl \u0000 \u0007 \u001b[0m and private \ue000",
    # text that looks like special tokens (matched only with --parse-special)
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "[CLS] [SEP] [MASK] <s> </s> <unk> <|begin_of_text|>",
    # mixed
    "Emails: a.b@example.com, URLs: https://example.org/path?q=1&x=y#frag",
    "Tabs\tand\nnewlines\r\nmixed   with 🙂 emoji and 数字 123",
]

PARSE_SPECIAL_TEXTS = [
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
    "<|endoftext|>text<|endoftext|>",
    "[CLS] hello [SEP] world [MASK]",
    "<s>Hello</s> <unk>",
    "<|begin_of_text|>Hello<|eot_id|>",
    "no specials here",
]

WORDS = (
    "the of and to in is was he for it with as his on be at by had are but from or have an they "
    "which one you were her all she there would their we him been has when who will more no if "
    "out so said what up its about into than them can only other new some could time these two "
    "may then do first any my now such like our over man me even most made after also did many "
    "before must through back years where much your way well down should because each just those "
    "people how too little state good very make world still own see men work long get here "
    "between both life being under never day same another know while last might us great old "
    "year off come since against go came right used take three hello quick brown fox jumps lazy "
    "dog capital france paris machine learning model token tokenizer python code function return"
).split()


def corpus(n_lines: int, seed: int) -> list[str]:
    """Deterministic pseudo-English with punctuation, numbers and contractions."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        n = rng.randint(4, 18)
        ws = [rng.choice(WORDS) for _ in range(n)]
        if rng.random() < 0.3:
            ws[0] = ws[0].capitalize()
        if rng.random() < 0.2:
            ws.insert(rng.randrange(len(ws)), str(rng.randint(0, 99999)))
        if rng.random() < 0.1:
            ws.insert(rng.randrange(len(ws)), rng.choice(["don't", "it's", "we'll", "I'm"]))
        lines.append(" ".join(ws) + rng.choice([".", ".", ",", "!", "?", ":", ""]))
    return lines


def long_english_text(n_bytes: int) -> str:
    paragraphs = []
    rng = random.Random(7)
    size = 0
    while size < n_bytes:
        p = " ".join(corpus(rng.randint(3, 8), seed=rng.randrange(1 << 30)))
        paragraphs.append(p)
        size += len(p) + 2
    return "\n\n".join(paragraphs)[:n_bytes]


# ---------------------------------------------------------------------------------------------
# Driving the binary


def output_lines(stdout: bytes) -> list[str]:
    # Split on "\n" only: str.splitlines() would also cut at U+0085 / U+2028 inside strings.
    return [l for l in stdout.decode().split("\n") if l.strip()]


def tokenize(frugal, model, texts, *flags, timeout=120):
    stdin = "".join(json.dumps(t) + "\n" for t in texts).encode()
    p = frugal.run("tokenize", "-m", model, "--jsonl", *flags, input=stdin, timeout=timeout)
    assert p.returncode == 0, (
        f"`frugal tokenize -m {model} --jsonl {' '.join(flags)}` exited {p.returncode}\n"
        f"stderr: {p.stderr.decode(errors='replace')[-3000:]}")
    lines = output_lines(p.stdout)
    assert len(lines) == len(texts), f"{len(texts)} lines in, {len(lines)} out"
    return [json.loads(l) for l in lines]


def decode(frugal, model, id_lists, *flags):
    stdin = "".join(json.dumps(ids) + "\n" for ids in id_lists).encode()
    p = frugal.run("tokenize", "-m", model, "--jsonl", "--decode", *flags, input=stdin)
    assert p.returncode == 0, (
        f"`frugal tokenize -m {model} --jsonl --decode` exited {p.returncode}\n"
        f"stderr: {p.stderr.decode(errors='replace')[-3000:]}")
    lines = output_lines(p.stdout)
    assert len(lines) == len(id_lists)
    return [json.loads(l) for l in lines]


def reference_ids(tok, texts, add_special=True, parse_special=False):
    old = tok.encode_special_tokens
    tok.encode_special_tokens = not parse_special  # True: specials in the text are plain text
    try:
        return [tok.encode(t, add_special_tokens=add_special).ids for t in texts]
    finally:
        tok.encode_special_tokens = old


def assert_same_ids(got, want, texts, what):
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    msg = "\n".join(f"  {t!r}\n    frugal:    {g}\n    reference: {w}" for t, g, w in bad[:8])
    assert not bad, f"{what}: {len(bad)} of {len(texts)} texts differ\n{msg}"


# ---------------------------------------------------------------------------------------------
# Tokenizers that the tests build themselves with the `tokenizers` package

LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def train_spm_bpe(variant: str, out_dir: Path) -> Path:
    """A Llama-2-style tokenizer.json: BPE with byte_fallback, <unk> <s> </s>, <0x00>..<0xFF>."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False)
    tok.train_from_iterator(corpus(3000, seed=1), trainer=trainer)

    j = json.loads(tok.to_str())
    specials = ["<unk>", "<s>", "</s>"]
    trained = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {s: i for i, s in enumerate(specials)}
    for b in range(256):  # byte tokens sit right after the specials, as in Llama 2
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for t, _ in trained:
        if t not in vocab:
            vocab[t] = len(vocab)
    j["model"]["vocab"] = vocab
    j["model"]["byte_fallback"] = True
    j["model"]["fuse_unk"] = True
    j["added_tokens"] = [
        {"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True} for s in specials]
    tok = Tokenizer.from_str(json.dumps(j))
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    if variant == "legacy":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                               normalizers.Replace(" ", "▁")])
        tok.pre_tokenizer = None
    elif variant == "metaspace-first":
        tok.normalizer = None
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                     split=False)
    elif variant == "metaspace-always-split":
        tok.normalizer = None
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always",
                                                     split=True)
    else:
        raise ValueError(variant)
    from tokenizers import processors

    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(out_dir / "tokenizer.json"))
    (out_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
         "add_bos_token": True, "add_eos_token": False}))
    return out_dir / "tokenizer.json"


# Tokens added to the byte-level vocabulary without merges that build them: only
# ignore_merges can produce them ("Ġxylophone", "129", "你好" in byte-level form).
IGNORE_MERGES_EXTRA = ["Ġxylophone", "Ġquizzical", "129", "ä½łå¥½"]


def train_llama3_style_bpe(out_dir: Path) -> Path:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(3000, seed=2), trainer=trainer)
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = True
    for t in IGNORE_MERGES_EXTRA:
        assert t not in j["model"]["vocab"], t
        j["model"]["vocab"][t] = max(j["model"]["vocab"].values()) + 1
    tok = Tokenizer.from_str(json.dumps(j))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)])
    path = out_dir / "llama3_style.json"
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def smollm2_ref_tok(smollm2_gguf):
    import ref_tokenizers

    return ref_tokenizers.bpe_from_gguf(str(smollm2_gguf))


@pytest.fixture(scope="module")
def minilm_tokenizer_json(minilm_dir):
    return minilm_dir / "tokenizer.json"


@pytest.fixture(scope="module")
def minilm_ref_tok(minilm_tokenizer_json):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_tokenizer_json))
    tok.no_padding()  # the file pads and truncates to 128; the engine leaves both to callers
    tok.no_truncation()
    return tok


@pytest.fixture(scope="module", params=["legacy", "metaspace-first", "metaspace-always-split"])
def spm_bpe(request, tmp_path_factory):
    from tokenizers import Tokenizer

    path = train_spm_bpe(request.param, tmp_path_factory.mktemp(f"spm_{request.param}"))
    return path, Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def llama3_style_bpe(tmp_path_factory):
    from tokenizers import Tokenizer

    path = train_llama3_style_bpe(tmp_path_factory.mktemp("llama3_style"))
    return path, Tokenizer.from_file(str(path))


# ---------------------------------------------------------------------------------------------
# (a) SmolLM2 GGUF


def test_smollm2_gguf_ids_match_reference(frugal, smollm2_gguf, smollm2_ref_tok):
    got = tokenize(frugal, smollm2_gguf, TEXTS)
    assert_same_ids(got, reference_ids(smollm2_ref_tok, TEXTS), TEXTS, "SmolLM2 GGUF")


def test_smollm2_known_ids(frugal, smollm2_gguf):
    # Pinned ids (SmolLM2 adds no BOS; digits are split one by one).
    got = tokenize(frugal, smollm2_gguf, ["Hello world! 123", "  multiple   spaces"])
    assert got == [[19556, 905, 17, 216, 33, 34, 35], [216, 2701, 256, 5600]]


def test_smollm2_special_flags(frugal, smollm2_gguf, smollm2_ref_tok):
    got = tokenize(frugal, smollm2_gguf, PARSE_SPECIAL_TEXTS, "--parse-special")
    want = reference_ids(smollm2_ref_tok, PARSE_SPECIAL_TEXTS, parse_special=True)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "SmolLM2 --parse-special")
    assert got[0][0] == smollm2_ref_tok.token_to_id("<|im_start|>")
    got = tokenize(frugal, smollm2_gguf, PARSE_SPECIAL_TEXTS)
    want = reference_ids(smollm2_ref_tok, PARSE_SPECIAL_TEXTS, parse_special=False)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "SmolLM2 specials as text")
    got = tokenize(frugal, smollm2_gguf, TEXTS[:10], "--no-special")
    assert_same_ids(got, reference_ids(smollm2_ref_tok, TEXTS[:10], add_special=False),
                    TEXTS[:10], "SmolLM2 --no-special")


def test_smollm2_corpus_and_long_text(frugal, smollm2_gguf, smollm2_ref_tok, alice_text):
    texts = corpus(200, seed=3) + [alice_text, long_english_text(20_000)]
    got = tokenize(frugal, smollm2_gguf, texts)
    assert_same_ids(got, reference_ids(smollm2_ref_tok, texts), texts, "SmolLM2 corpus")


def test_smollm2_decode_round_trip(frugal, smollm2_gguf, smollm2_ref_tok):
    ids = tokenize(frugal, smollm2_gguf, TEXTS, "--no-special")
    back = decode(frugal, smollm2_gguf, ids)
    bad = [(t, b) for t, b in zip(TEXTS, back) if t != b]
    assert not bad, f"decode(encode(x)) != x for {len(bad)} texts, e.g. {bad[:3]!r}"
    # Specials read as written, or are dropped with --skip-special.
    ids = tokenize(frugal, smollm2_gguf, PARSE_SPECIAL_TEXTS[:1], "--parse-special")
    assert decode(frugal, smollm2_gguf, ids) == PARSE_SPECIAL_TEXTS[:1]
    assert decode(frugal, smollm2_gguf, ids, "--skip-special") == [
        smollm2_ref_tok.decode(ids[0], skip_special_tokens=True)]


def test_smollm2_encode_speed(frugal, smollm2_gguf):
    """100 KB of English must encode well under a second (load time measured apart)."""
    text = long_english_text(100_000)
    t0 = time.perf_counter()
    tokenize(frugal, smollm2_gguf, ["x"])
    t1 = time.perf_counter()
    ids = tokenize(frugal, smollm2_gguf, [text])
    t2 = time.perf_counter()
    encode_s = (t2 - t1) - (t1 - t0)
    print(f"100 KB -> {len(ids[0])} tokens; load {t1 - t0:.3f} s, encode ~{encode_s:.3f} s")
    assert encode_s < 1.0, f"encoding 100 KB took {encode_s:.2f} s"


# ---------------------------------------------------------------------------------------------
# (b) all-MiniLM-L6-v2 (WordPiece)


def test_minilm_ids_match_reference(frugal, minilm_tokenizer_json, minilm_ref_tok):
    texts = TEXTS + corpus(50, seed=4)
    got = tokenize(frugal, minilm_tokenizer_json, texts)
    assert_same_ids(got, reference_ids(minilm_ref_tok, texts), texts, "MiniLM tokenizer.json")
    got = tokenize(frugal, minilm_tokenizer_json, TEXTS, "--no-special")
    assert_same_ids(got, reference_ids(minilm_ref_tok, TEXTS, add_special=False), TEXTS,
                    "MiniLM --no-special")


def test_minilm_folder_and_special_flags(frugal, minilm_dir, minilm_ref_tok):
    got = tokenize(frugal, minilm_dir, PARSE_SPECIAL_TEXTS, "--parse-special")
    want = reference_ids(minilm_ref_tok, PARSE_SPECIAL_TEXTS, parse_special=True)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "MiniLM --parse-special")
    got = tokenize(frugal, minilm_dir, PARSE_SPECIAL_TEXTS)
    want = reference_ids(minilm_ref_tok, PARSE_SPECIAL_TEXTS, parse_special=False)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "MiniLM specials as text")


def test_minilm_decode_matches_reference(frugal, minilm_tokenizer_json, minilm_ref_tok):
    ids = tokenize(frugal, minilm_tokenizer_json, TEXTS)
    got = decode(frugal, minilm_tokenizer_json, ids, "--skip-special")
    want = [minilm_ref_tok.decode(i, skip_special_tokens=True) for i in ids]
    bad = [(t, g, w) for t, g, w in zip(TEXTS, got, want) if g != w]
    assert not bad, f"{len(bad)} decodes differ, e.g. {bad[:3]!r}"
    got = decode(frugal, minilm_tokenizer_json, ids)
    want = [minilm_ref_tok.decode(i, skip_special_tokens=False) for i in ids]
    assert got == want


# ---------------------------------------------------------------------------------------------
# (c) SentencePiece-style BPE with byte fallback


def test_spm_byte_fallback_ids_match_reference(frugal, spm_bpe):
    path, ref = spm_bpe
    texts = TEXTS + corpus(50, seed=5)
    got = tokenize(frugal, path, texts)
    assert_same_ids(got, reference_ids(ref, texts), texts, f"SPM BPE {path.parent.name}")
    got = tokenize(frugal, path, TEXTS, "--no-special")
    assert_same_ids(got, reference_ids(ref, TEXTS, add_special=False), TEXTS, "SPM --no-special")
    got = tokenize(frugal, path, PARSE_SPECIAL_TEXTS, "--parse-special")
    want = reference_ids(ref, PARSE_SPECIAL_TEXTS, parse_special=True)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "SPM --parse-special")
    # Byte fallback is exercised: "你" is not in the vocabulary, its UTF-8 bytes are.
    ids = tokenize(frugal, path, ["你"], "--no-special")[0]
    assert [ref.id_to_token(i) for i in ids][-3:] == ["<0xE4>", "<0xBD>", "<0xA0>"]


def test_spm_decode(frugal, spm_bpe):
    path, ref = spm_bpe
    ids = tokenize(frugal, path, TEXTS)
    got = decode(frugal, path, ids, "--skip-special")
    want = [ref.decode(i, skip_special_tokens=True) for i in ids]
    bad = [(t, g, w) for t, g, w in zip(TEXTS, got, want) if g != w]
    assert not bad, f"{len(bad)} decodes differ from the reference, e.g. {bad[:3]!r}"
    # And the text comes back (the legacy layout doubles no space: "  x" -> "▁▁▁x" -> "  x").
    if path.parent.name.startswith("spm_legacy"):
        back = [t for t in got]
        assert back == TEXTS


# ---------------------------------------------------------------------------------------------
# (d) byte-level BPE with Llama 3's regex and ignore_merges


def test_llama3_style_ids_match_reference(frugal, llama3_style_bpe):
    path, ref = llama3_style_bpe
    texts = TEXTS + corpus(50, seed=6) + [
        "the xylophone and a quizzical 1299 你好", " xylophone xylophones 129129"]
    got = tokenize(frugal, path, texts)
    assert_same_ids(got, reference_ids(ref, texts), texts, "Llama-3-style BPE")
    # ignore_merges is exercised: the whole word is one token though no merge builds it.
    ids = tokenize(frugal, path, [" xylophone"], "--no-special")[0]
    assert ids == [ref.token_to_id("Ġxylophone")]
    got = tokenize(frugal, path, PARSE_SPECIAL_TEXTS, "--parse-special")
    want = reference_ids(ref, PARSE_SPECIAL_TEXTS, parse_special=True)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "Llama-3-style --parse-special")


def test_llama3_style_decode_round_trip(frugal, llama3_style_bpe):
    path, _ = llama3_style_bpe
    ids = tokenize(frugal, path, TEXTS, "--no-special")
    assert decode(frugal, path, ids) == TEXTS


# ---------------------------------------------------------------------------------------------
# The same tokenizers in GGUF form (as llama.cpp's converter writes them): exercises FromGguf
# for the "llama" (SentencePiece, score-driven merging), "bert" (phantom-space vocabulary) and
# "gpt2" with a named pre-tokenizer ("llama-bpe": Llama 3 regex, ignore_merges, BOS).


def write_gguf(path: Path, model: str, tokens, types, *, scores=None, merges=None, pre=None,
               ids=None, flags=None) -> Path:
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model(model)
    if pre is not None:
        w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if scores is not None:
        w.add_token_scores(scores)
    if merges is not None:
        w.add_token_merges(merges)
    for key, value in (ids or {}).items():
        w.add_uint32(f"tokenizer.ggml.{key}", value)
    for key, value in (flags or {}).items():
        w.add_bool(f"tokenizer.ggml.{key}", value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def vocab_by_id(tok) -> list[str]:
    v = tok.get_vocab(with_added_tokens=True)
    assert sorted(v.values()) == list(range(len(v))), "vocabulary ids must be dense"
    tokens = [""] * len(v)
    for t, i in v.items():
        tokens[i] = t
    return tokens


def test_gguf_spm_scores_match_sentencepiece_reference(frugal, tmp_path):
    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(str(train_spm_bpe("legacy", tmp_path / "src")))
    tokens = vocab_by_id(ref)
    # Trained ids grow with merge order, so -id ranks merges as the trainer made them.
    scores = [-float(i) for i in range(len(tokens))]
    types = [3 if t in ("<s>", "</s>") else 2 if t == "<unk>" else
             6 if t.startswith("<0x") else 1 for t in tokens]
    model = write_gguf(tmp_path / "spm.gguf", "llama", tokens, types, scores=scores,
                       ids={"bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0},
                       flags={"add_bos_token": True, "add_space_prefix": True})
    texts = TEXTS + corpus(50, seed=8)
    got = tokenize(frugal, model, texts)
    assert_same_ids(got, reference_ids(ref, texts), texts, "GGUF llama (scores)")
    got = tokenize(frugal, model, PARSE_SPECIAL_TEXTS, "--parse-special")
    want = reference_ids(ref, PARSE_SPECIAL_TEXTS, parse_special=True)
    assert_same_ids(got, want, PARSE_SPECIAL_TEXTS, "GGUF llama --parse-special")
    ids = tokenize(frugal, model, TEXTS)
    assert decode(frugal, model, ids, "--skip-special") == [
        ref.decode(i, skip_special_tokens=True) for i in ids]


def test_gguf_bert_phantom_space_vocab(frugal, minilm_tokenizer_json, minilm_ref_tok, tmp_path):
    tokens = vocab_by_id(minilm_ref_tok)
    specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

    def phantom(t):  # convert_hf_to_gguf.py's BERT vocabulary form
        if t.startswith("[") and t.endswith("]"):
            return t
        return t[2:] if t.startswith("##") else "\u2581" + t

    model = write_gguf(tmp_path / "bert.gguf", "bert", [phantom(t) for t in tokens],
                       [3 if t in specials else 1 for t in tokens],
                       ids={"unknown_token_id": 100, "cls_token_id": 101,
                            "seperator_token_id": 102, "padding_token_id": 0})
    texts = TEXTS + corpus(30, seed=9)
    got = tokenize(frugal, model, texts)
    assert_same_ids(got, reference_ids(minilm_ref_tok, texts), texts, "GGUF bert")


def test_gguf_gpt2_llama_bpe_preset(frugal, llama3_style_bpe, tmp_path):
    path, ref = llama3_style_bpe
    tokens = vocab_by_id(ref)
    j = json.loads(path.read_text())
    merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    specials = {a["content"] for a in j["added_tokens"]}
    model = write_gguf(tmp_path / "l3.gguf", "gpt2", tokens,
                       [3 if t in specials else 1 for t in tokens], merges=merges,
                       pre="llama-bpe",
                       ids={"bos_token_id": ref.token_to_id("<|begin_of_text|>"),
                            "eos_token_id": ref.token_to_id("<|end_of_text|>")})
    texts = TEXTS + corpus(50, seed=10) + ["the xylophone and a quizzical 1299 你好"]
    got = tokenize(frugal, model, texts)  # llama.cpp's defaults: BOS added, ignore_merges on
    assert_same_ids(got, reference_ids(ref, texts), texts, "GGUF gpt2 llama-bpe")


# ---------------------------------------------------------------------------------------------
# Errors


def test_malformed_and_unsupported_tokenizer_json(frugal, tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": {"type": "BPE", "vocab": ')
    p = frugal.run("tokenize", "-m", bad, "--jsonl", input=b'"x"\n')
    assert p.returncode != 0 and p.stderr, "malformed tokenizer.json must fail with a message"
    unigram = tmp_path / "unigram" / "tokenizer.json"
    unigram.parent.mkdir()
    unigram.write_text(json.dumps({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}))
    p = frugal.run("tokenize", "-m", unigram, "--jsonl", input=b'"x"\n')
    assert p.returncode != 0 and b"Unigram" in p.stderr
