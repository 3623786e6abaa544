"""The predictors of the promoted model versions, loaded once per version, kept in memory.

Each request asks the database which version is promoted (one narrow indexed query), so a
promotion reaches every replica at its next request, with no restart. The artifact is read
and loaded only when that version changes, after its sha256 is checked.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sqlalchemy.orm import Session

from service.recommendations.model_format import artifact_sha256, load_predictor
from service.recommendations.predictor import ArtifactError, Predictor
from service.registry.repository import RegistryRepository

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PromotedPointer:
    version_id: int
    name: str
    version: int
    sha256: str

    @property
    def label(self) -> str:
        return f"{self.name}:{self.version}"


@dataclass(frozen=True, slots=True)
class LoadedPredictor:
    pointer: PromotedPointer
    predictor: Predictor


class PredictorLoadError(Exception):
    pass


class PredictorCache:
    """Per engine, the predictor of its promoted version; failures are remembered too."""

    def __init__(self, *, allow_pickle: bool) -> None:
        self._allow_pickle = allow_pickle
        self._lock = threading.Lock()
        self._by_engine: dict[str, LoadedPredictor] = {}
        #: Versions that failed to load (by id and sha): not retried on every request.
        self._failed: dict[tuple[int, str], str] = {}

    def promoted_pointer(self, session: Session, engine: str) -> PromotedPointer | None:
        row = RegistryRepository(session).promoted_pointer(engine)
        if row is None:
            return None
        return PromotedPointer(version_id=row[0], name=row[1], version=row[2], sha256=row[3])

    def get(self, session: Session, engine: str, pointer: PromotedPointer) -> LoadedPredictor:
        loaded = self._by_engine.get(engine)
        if loaded is not None and loaded.pointer == pointer:
            return loaded
        with self._lock:
            loaded = self._by_engine.get(engine)
            if loaded is not None and loaded.pointer == pointer:
                return loaded
            failure = self._failed.get((pointer.version_id, pointer.sha256))
            if failure is not None:
                raise PredictorLoadError(failure)
            try:
                predictor = self._load(session, pointer)
            except PredictorLoadError as exc:
                self._failed[(pointer.version_id, pointer.sha256)] = str(exc)
                logger.error(
                    "promoted model failed to load; answering from the heuristic",
                    extra={"engine": engine, "model_version": pointer.label, "error": str(exc)},
                )
                raise
            loaded = LoadedPredictor(pointer=pointer, predictor=predictor)
            self._by_engine[engine] = loaded
            logger.info(
                "promoted model loaded", extra={"engine": engine, "model_version": pointer.label}
            )
            return loaded

    def _load(self, session: Session, pointer: PromotedPointer) -> Predictor:
        artifact = RegistryRepository(session).artifact(pointer.version_id)
        if artifact is None:
            raise PredictorLoadError(f"model version {pointer.label} has no artifact")
        actual = artifact_sha256(artifact)
        if actual != pointer.sha256:
            raise PredictorLoadError(
                f"artifact sha256 mismatch for {pointer.label}: stored {pointer.sha256}, "
                f"computed {actual}"
            )
        try:
            return load_predictor(artifact, allow_pickle=self._allow_pickle)
        except ArtifactError as exc:
            raise PredictorLoadError(f"artifact of {pointer.label} does not load: {exc}") from exc
