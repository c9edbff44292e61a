"""seed's weight-broadcast frames, read by other implementations.

The C tool (weights_test capture DIR) publishes one blob twice, with fp32 and with bf16
transport, captures the raw announce and bucket frames a client receives, and writes what
seed's own receiver assembled. This script decodes the frames with Python's protobuf
runtime (descriptors built from proto/seed.proto by protoc-c), recomputes every CRC-32C
with google-crc32c, rounds the blob to bf16 with torch, and checks:
  - the announce: schema, version, sizes, bucket count, tensor table, config, CRCs;
  - every bucket: version, index, offset, bytes equal to the blob's (fp32) or torch's bf16
    of the blob, CRC-32C equal to google-crc32c's and to the announce's;
  - seed_crc32c over odd offsets and lengths, chained in two calls: equal to google-crc32c;
  - the receiver's blob: byte-identical to the blob (fp32), or to torch's
    float32(bfloat16(blob)) (bf16). NaNs are compared as NaN everywhere: torch itself
    writes 0x7FC0 or 0xFFFF for a NaN depending on its code path; seed keeps its sign (common/bf16.h).
Tolerance: none — these are byte copies and a deterministic rounding.
"""
import json
import os
import subprocess
import sys
import tempfile

import google_crc32c
import numpy as np
import torch
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

TOOL, PROTOC_C, PROTO = sys.argv[1:4]


def envelope_class(tmp):
    desc = os.path.join(tmp, "seed.desc")
    subprocess.run([PROTOC_C, f"--proto_path={os.path.dirname(PROTO)}",
                    f"--descriptor_set_out={desc}", PROTO], check=True)
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(desc, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("seed.Envelope"))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        Envelope = envelope_class(tmp)
        subprocess.run([TOOL, "capture", tmp], check=True, timeout=50)
        rd = lambda name: open(os.path.join(tmp, name), "rb").read()
        blob = rd("blob.bin")
        table = json.loads(rd("table.json"))
        config = rd("config.json").decode()
        for line in rd("crc_cases.txt").decode().split("\n")[:-1]:
            off, n, crc = map(int, line.split())
            assert google_crc32c.value(blob[off:off + n]) == crc, f"seed_crc32c at {off}+{n}"
        f32 = np.frombuffer(blob, dtype=np.float32).copy()
        bf16 = torch.from_numpy(f32).to(torch.bfloat16)
        transports = {
            "f32": (0, blob),
            "bf16": (1, bf16.view(torch.int16).numpy().tobytes()),
        }
        for tag, (dtype, transport) in transports.items():
            env = Envelope.FromString(rd(f"{tag}_announce.bin"))
            assert env.schema == 1 and env.WhichOneof("body") == "weight_announce", env
            a = env.weight_announce
            nb = -(-len(transport) // a.bucket_bytes)
            assert a.total_bytes == len(blob), (a.total_bytes, len(blob))
            assert a.transport_dtype == dtype and a.n_buckets == nb, (a.transport_dtype, a.n_buckets)
            assert len(a.bucket_crc32c) == nb and a.config_json == config
            assert len(a.tensors) == len(table)
            for t, want in zip(a.tensors, table):
                got = {"name": t.name, "shape": list(t.shape), "offset": t.offset,
                       "nbytes": t.nbytes}
                assert got == want and t.dtype == 0, (got, want)
            for i in range(nb):
                e = Envelope.FromString(rd(f"{tag}_bucket_{i}.bin"))
                assert e.schema == 1 and e.WhichOneof("body") == "weight_bucket"
                b = e.weight_bucket
                off = i * a.bucket_bytes
                assert b.version == a.version and b.index == i and b.offset == off, b
                want = transport[off:off + a.bucket_bytes]
                if tag == "f32":
                    assert b.data == want, f"f32 bucket {i} differs from the blob"
                else:
                    g = np.frombuffer(b.data, dtype=np.uint16)
                    w = np.frombuffer(want, dtype=np.uint16)
                    nan = (w & 0x7FFF) > 0x7F80  # torch's NaN payload varies by code path
                    assert g.shape == w.shape and np.array_equal((g & 0x7FFF) > 0x7F80, nan)
                    assert np.array_equal(g[~nan], w[~nan]), f"bf16 bucket {i} differs from torch"
                crc = google_crc32c.value(b.data)
                assert b.crc32c == crc == a.bucket_crc32c[i], (tag, i, b.crc32c, crc)
            got = np.frombuffer(rd(f"{tag}_received.bin"), dtype=np.uint32)
            if tag == "f32":
                want = np.frombuffer(blob, dtype=np.uint32)
                assert np.array_equal(got, want), "fp32 receiver blob differs"
            else:
                want_f = bf16.to(torch.float32).numpy()
                got_f = got.view(np.float32)
                nan = np.isnan(want_f)
                assert np.array_equal(np.isnan(got_f), nan), "bf16: NaN positions differ"
                bad = np.nonzero(got[~nan] != want_f.view(np.uint32)[~nan])[0]
                assert bad.size == 0, f"bf16: {bad.size} words differ from torch, first {bad[:5]}"
            print(f"{tag}: announce v{a.version} ({nb} buckets of {a.bucket_bytes} B, "
                  f"{len(a.tensors)} tensors) and every bucket decode with protobuf "
                  f"{__import__('google.protobuf').protobuf.__version__}; CRC-32C equal to "
                  f"google-crc32c; receiver blob equal to the reference")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
