"""Write a trained :class:`~service.recommendations.tuple_model.TupleModel` as artifact bytes.

The service reads them with ``TupleModel.from_bytes``; the layout is in docs/trainer.md
("The model artifact").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import lightgbm as lgb

from service.recommendations.intervals import Calibration
from service.recommendations.tuple_model import FORMAT, KnobModel, TupleModel


def _booster(booster: lgb.Booster | None) -> str | None:
    return None if booster is None else booster.model_to_string()


def _calibrations(calibrations: Mapping[str, Calibration]) -> dict[str, dict[str, Any]]:
    return {domain: calibration.to_dict() for domain, calibration in calibrations.items()}


def _knob(model: KnobModel) -> dict[str, Any]:
    return {
        "median": _booster(model.median),
        "low": _booster(model.low),
        "high": _booster(model.high),
        "constant": model.constant,
        "offset": model.offset,
        "init": model.init,
        "calibration": _calibrations(model.calibration),
        "gain": _booster(model.gain),
        "min_gain": model.min_gain,
        "choices": list(model.choices),
    }


def artifact_bytes(model: TupleModel) -> bytes:
    """The model as UTF-8 JSON: boosters as LightGBM model strings, no pickle."""
    curve = model.curve
    document: dict[str, Any] = {
        "format": FORMAT,
        "engine": model.engine.value,
        "features": list(model.features),
        "quantiles": list(model.quantiles),
        "domain": model.domain,
        "knobs": {name: _knob(m) for name, m in model.knob_models.items()},
        "novelty": None if model.novelty is None else model.novelty.to_dict(),
        "throughput_curve": None
        if curve is None
        else {
            "booster": curve.booster.model_to_string(),
            "calibration": _calibrations(curve.calibration),
            "min_scale": curve.min_scale,
        },
    }
    return json.dumps(document, separators=(",", ":")).encode()
