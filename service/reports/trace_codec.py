"""Compact storage of climb traces: zlib-compressed JSON, one object per sample.

Sample keys repeat on every line, which zlib removes; a 1,000-sample trace takes about
10-15 kB instead of ~120 kB of JSON. ``FORMAT`` prefixes the blob so the encoding can change.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

from agents.wire import TraceSample

FORMAT = b"ptz1"


def encode_trace(trace: Sequence[TraceSample]) -> bytes:
    samples = [sample.model_dump(mode="json", exclude_defaults=True) for sample in trace]
    payload = json.dumps(samples, separators=(",", ":")).encode()
    return FORMAT + zlib.compress(payload, level=6)


def decode_trace(blob: bytes) -> list[TraceSample]:
    if not blob.startswith(FORMAT):
        raise ValueError("unknown trace encoding")
    samples = json.loads(zlib.decompress(blob[len(FORMAT) :]))
    return [TraceSample.model_validate(sample) for sample in samples]
