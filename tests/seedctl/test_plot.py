"""seedctl plot: a PNG of learning curves from committed metrics.jsonl files.

The two runs under plot_runs/ (40 RL records each, an eval every 10 steps, one line of
junk) are plotted together; the PNG is decoded here (zlib + PNG's row filters) and must
have the requested size and show both runs: gnuplot draws linetype 1 in #9400D3 and
linetype 2 in #009E73, and each colour must cover a line's worth of pixels. Runs 9 and 10
of a plot of 10 get colours of their own (gnuplot's default cycles after 8, so run 9
would share run 1's). Errors: no run, a missing run dir, a run whose file holds no usable
record.
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

SEEDCTL = sys.argv[1]
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot_runs")


def decode_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(kind + body) == crc, "bad CRC in chunk %r" % kind
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
    assert depth == 8 and ctype in (2, 6), hdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def count_colour(rows, bpp, rgb):
    n = 0
    for r in rows:
        for x in range(0, len(r), bpp):
            if tuple(r[x:x + 3]) == rgb:
                n += 1
    return n


with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "curves.png")
    p = subprocess.run([SEEDCTL, "plot", os.path.join(HERE, "grpo"), os.path.join(HERE, "seed"),
                        "-o", out], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "1 line(s) that are not JSON objects skipped" in p.stderr, p.stderr
    w, h, bpp, rows = decode_png(out)
    assert (w, h) == (1600, 560), (w, h)
    for name, rgb in (("grpo", (0x94, 0x00, 0xD3)), ("seed", (0x00, 0x9E, 0x73))):
        n = count_colour(rows, bpp, rgb)
        assert n > 400, "run %s drew %d pixels of its colour" % (name, n)

    # the evaluation on a training pool (eval_pool_success) is a series of its own: the same
    # run with it draws more of the run's colour than without it
    import json
    drawn = []
    for with_pool in (False, True):
        run = os.path.join(d, "pool%d" % with_pool)
        os.makedirs(run)
        with open(os.path.join(run, "metrics.jsonl"), "w") as f:
            for line in open(os.path.join(HERE, "seed", "metrics.jsonl")):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if with_pool and "eval_success" in rec:
                    rec["eval_pool_success"] = 1.0 - rec["eval_success"]
                f.write(json.dumps(rec) + "\n")
        png = os.path.join(d, "pool%d.png" % with_pool)
        p = subprocess.run([SEEDCTL, "plot", run, "-o", png], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        w, h, bpp, rows = decode_png(png)
        drawn.append(count_colour(rows, bpp, (0x94, 0x00, 0xD3)))
    assert drawn[1] > drawn[0] + 200, "the training-pool series drew nothing: %s" % drawn

    # ten runs: the ninth and tenth draw in colours of their own, not the first two's
    many = []
    for k in range(10):
        run = os.path.join(d, "many_%d" % k)
        os.makedirs(run)
        with open(os.path.join(run, "metrics.jsonl"), "w") as f:
            for line in open(os.path.join(HERE, "grpo" if k % 2 else "seed", "metrics.jsonl")):
                f.write(line)
        many.append(run)
    png = os.path.join(d, "many.png")
    p = subprocess.run([SEEDCTL, "plot"] + many + ["-o", png], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    w, h, bpp, rows = decode_png(png)
    for k, rgb in ((9, (0x8C, 0x56, 0x4B)), (10, (0xAA, 0x44, 0x99))):
        n = count_colour(rows, bpp, rgb)
        assert n > 400, "run %d drew %d pixels of its colour" % (k, n)

    def fails(args, want):
        p = subprocess.run([SEEDCTL, "plot"] + args, capture_output=True, text=True)
        assert p.returncode != 0 and want in p.stderr, (args, p.returncode, p.stderr)

    fails([], "expected at least one RUN")
    fails([os.path.join(d, "nope")], "metrics.jsonl: cannot read it")
    empty = os.path.join(d, "empty")
    os.makedirs(empty)
    open(os.path.join(empty, "metrics.jsonl"), "w").write('{"step": 1}\n')
    fails([empty], "no record with env_steps_seen")
    fails([empty, "--bogus"], "unknown option '--bogus'")
print("plot: 1600x560 PNG with both runs drawn, the training-pool series too, 10 runs in "
      "10 colours; errors named")
