"""Compact storage of climb traces: zlib-compressed JSON, one object per sample.

Sample keys repeat on every line, which zlib removes; a 1,000-sample trace takes about
10-15 kB instead of ~120 kB of JSON. ``FORMAT`` prefixes the blob so the encoding can change.
Fields at their defaults are left out of each sample.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter

from agents.wire import TraceSample

FORMAT = b"ptz1"


class TraceDecodeError(ValueError):
    """A stored trace that does not decode to samples (damaged, or an unknown encoding)."""


def encode_samples(samples: Sequence[dict[str, Any]]) -> bytes:
    """The blob for samples given as JSON objects (what :func:`decode_samples` returns)."""
    return _compressed(json.dumps(list(samples), separators=(",", ":")).encode())


def _compressed(payload: bytes) -> bytes:
    """The blob of a JSON list of samples already encoded."""
    return FORMAT + zlib.compress(payload, level=6)


def decode_samples(blob: bytes) -> list[dict[str, Any]]:
    """The stored samples as JSON objects, not validated (migrations rewrite these)."""
    if not blob.startswith(FORMAT):
        raise TraceDecodeError("unknown trace encoding")
    try:
        samples = json.loads(zlib.decompress(blob[len(FORMAT) :]))
    except (zlib.error, ValueError, RecursionError) as exc:
        raise TraceDecodeError(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
    if not isinstance(samples, list):
        raise TraceDecodeError(f"expected a list of samples, found {type(samples).__name__}")
    return samples


#: Dumps a whole trace in one call (a per-sample model_dump costs ~5 µs each on ingest).
_TRACE = TypeAdapter(list[TraceSample])


def encode_trace(trace: Sequence[TraceSample]) -> bytes:
    """The blob of a validated trace, serialised by pydantic's own JSON encoder (the stdlib's
    cost most of an ingest's CPU)."""
    return _compressed(_TRACE.dump_json(list(trace), exclude_defaults=True))


def decode_trace(blob: bytes) -> list[TraceSample]:
    """The stored trace, validated; :class:`TraceDecodeError` when it is damaged."""
    samples = decode_samples(blob)
    try:
        return [TraceSample.model_validate(sample) for sample in samples]
    except (ValueError, RecursionError) as exc:
        raise TraceDecodeError(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
