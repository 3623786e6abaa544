"""A booster's scores for a matrix of profiles, fast for the single row a request brings.

``Booster.predict`` sets up a predictor on every call, which costs more than walking a few
hundred trees for one row; LightGBM's C API has a single-row entry whose setup is done once
(``LGBM_BoosterPredictForMatSingleRowFast``). A request's recommendation asks some nine
boosters for one row each, so that set-up is most of its time. The entry is reached through
the Python package's own handles; if they are missing (another LightGBM version) the ordinary
``predict`` answers, with the same numbers. Several threads may share a booster: LightGBM
serialises single-row predictions on it, and each call has its own output buffer.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import weakref
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

_PREDICT_NORMAL = 0
_DTYPE_FLOAT64 = 1
#: Up to this many rows the single-row entry is faster than one ``predict``.
_FEW_ROWS = 4


class _FastRow:
    """The single-row entry of one booster, set up once, freed with the booster."""

    def __init__(self, booster: lgb.Booster, columns: int) -> None:
        from lightgbm import basic

        self._lib: Any = basic._LIB  # type: ignore[attr-defined]
        self._safe_call = basic._safe_call
        self.columns = columns
        self.config = ctypes.c_void_p()
        iterations = booster.best_iteration if booster.best_iteration > 0 else -1
        self._safe_call(
            self._lib.LGBM_BoosterPredictForMatSingleRowFastInit(
                booster._handle,
                ctypes.c_int(_PREDICT_NORMAL),
                ctypes.c_int(0),
                ctypes.c_int(iterations),
                ctypes.c_int(_DTYPE_FLOAT64),
                ctypes.c_int32(columns),
                ctypes.c_char_p(b"num_threads=1"),
                ctypes.byref(self.config),
            )
        )
        weakref.finalize(self, self._lib.LGBM_FastConfigFree, self.config)

    def __call__(self, row: NDArray[np.float64]) -> float:
        data = np.ascontiguousarray(row, dtype=np.float64)
        out = ctypes.c_double(0.0)
        length = ctypes.c_int64(0)
        self._safe_call(
            self._lib.LGBM_BoosterPredictForMatSingleRowFast(
                self.config,
                ctypes.c_void_p(data.ctypes.data),
                ctypes.byref(length),
                ctypes.byref(out),
            )
        )
        return out.value


_entries: weakref.WeakKeyDictionary[lgb.Booster, _FastRow | None] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _entry(booster: lgb.Booster, columns: int) -> _FastRow | None:
    entry = _entries.get(booster, False)
    if entry is not False:
        return entry  # type: ignore[return-value]
    with _lock:
        entry = _entries.get(booster, False)
        if entry is False:
            try:
                entry = _FastRow(booster, columns)
            except (AttributeError, ImportError, lgb.basic.LightGBMError) as exc:
                logger.info("LightGBM's single-row entry is not usable (%s); predict() serves", exc)
                entry = None
            _entries[booster] = entry
    return entry  # type: ignore[return-value]


def booster_scores(booster: lgb.Booster, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """The booster's predictions for every row of ``matrix`` (a few rows one by one through
    the single-row entry, more through ``predict``)."""
    if 0 < matrix.shape[0] <= _FEW_ROWS:
        entry = _entry(booster, matrix.shape[1])
        if entry is not None and entry.columns == matrix.shape[1]:
            return np.array([entry(row) for row in matrix], dtype=np.float64)
    return np.asarray(booster.predict(matrix), dtype=np.float64)
