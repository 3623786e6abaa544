"""The predictors of the promoted model versions, loaded once per version, kept in memory.

Which version is promoted is one narrow indexed query; the hot route reuses its answer for
``promotion_check_s`` (:meth:`PredictorCache.recent_pointer`), so a promotion reaches every
replica within that bound, with no restart. The artifact is read and loaded only when that
version changes, after its sha256 is checked; the service preloads the promoted versions at
start-up (:meth:`PredictorCache.preload`), so requests find the model in memory.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time
from collections.abc import Awaitable, Callable
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


#: Reads a model version's artifact (None when it has none).
ArtifactReader = Callable[[int], Awaitable[bytes | None]]


class _Unread(enum.Enum):
    UNREAD = "unread"


#: :meth:`PredictorCache.recent_pointer`: no reading recent enough, ask the database.
UNREAD = _Unread.UNREAD


class PredictorCache:
    """Per engine, the predictor of its promoted version; failures are remembered too."""

    def __init__(self, *, allow_pickle: bool) -> None:
        self._allow_pickle = allow_pickle
        self._lock = threading.Lock()
        self._by_engine: dict[str, LoadedPredictor] = {}
        #: Versions that failed to load (by id and sha): not retried on every request.
        self._failed: dict[tuple[int, str], str] = {}
        #: Per engine: held by the request loading a new version on the event loop.
        self._loading: dict[str, asyncio.Lock] = {}
        #: Per engine: the promoted pointer last read and when (time.monotonic()).
        self._pointers: dict[str, tuple[PromotedPointer | None, float]] = {}

    def now(self) -> float:
        return time.monotonic()

    def recent_pointer(self, engine: str, *, max_age_s: float) -> PromotedPointer | None | _Unread:
        """The promoted pointer read less than ``max_age_s`` ago, else :data:`UNREAD`."""
        reading = self._pointers.get(engine)
        if reading is None or self.now() - reading[1] >= max_age_s:
            return UNREAD
        return reading[0]

    def remember_pointer(
        self, engine: str, pointer: PromotedPointer | None, *, read_at: float
    ) -> None:
        """Record a reading started at ``read_at`` (its age counts from before the query)."""
        self._pointers[engine] = (pointer, read_at)

    def forget_pointers(self) -> None:
        """A promotion or demotion here: the next request reads the database again."""
        self._pointers.clear()

    def peek(self, engine: str, pointer: PromotedPointer | None) -> LoadedPredictor | None:
        """The loaded predictor of ``pointer`` if it is in memory (raises the remembered
        PredictorLoadError of a version that failed); None when it must be loaded."""
        if pointer is None:
            return None
        loaded = self._by_engine.get(engine)
        if loaded is not None and loaded.pointer == pointer:
            return loaded
        failure = self._failed.get((pointer.version_id, pointer.sha256))
        if failure is not None:
            raise PredictorLoadError(failure)
        return None

    def preload(self, session: Session, engines: list[str]) -> None:
        """Load the promoted version of each engine now (start-up), so that no request
        pays for it; a version that fails is remembered as failed."""
        for engine in engines:
            pointer = self.promoted_pointer(session, engine)
            self.remember_pointer(engine, pointer, read_at=self.now())
            if pointer is not None:
                try:
                    self.get(session, engine, pointer)
                except PredictorLoadError:
                    pass  # logged by get(); requests answer from the heuristic

    def promoted_pointer(self, session: Session, engine: str) -> PromotedPointer | None:
        row = RegistryRepository(session).promoted_pointer(engine)
        if row is None:
            return None
        return PromotedPointer(version_id=row[0], name=row[1], version=row[2], sha256=row[3])

    def get(self, session: Session, engine: str, pointer: PromotedPointer) -> LoadedPredictor:
        """The predictor of ``pointer``, loaded from the database if it is not in memory."""
        loaded = self.peek(engine, pointer)
        if loaded is not None:
            return loaded
        artifact = RegistryRepository(session).artifact(pointer.version_id)
        return self.install(engine, pointer, artifact)

    async def get_async(
        self, engine: str, pointer: PromotedPointer, read_artifact: ArtifactReader
    ) -> LoadedPredictor:
        """:meth:`get` on an event loop: one request per engine reads and loads a new
        version, the others wait for it (never a thread lock held across a query)."""
        loaded = self.peek(engine, pointer)
        if loaded is not None:
            return loaded
        lock = self._loading.setdefault(engine, asyncio.Lock())
        async with lock:
            loaded = self.peek(engine, pointer)
            if loaded is not None:
                return loaded
            artifact = await read_artifact(pointer.version_id)
            return self.install(engine, pointer, artifact)

    def install(
        self, engine: str, pointer: PromotedPointer, artifact: bytes | None
    ) -> LoadedPredictor:
        """Check and load ``artifact`` as the predictor of ``pointer`` (no I/O here: the
        thread lock is never held across a query); a failure is remembered and raised."""
        with self._lock:
            loaded = self.peek(engine, pointer)
            if loaded is not None:
                return loaded
            try:
                predictor = self._load(pointer, artifact)
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

    def _load(self, pointer: PromotedPointer, artifact: bytes | None) -> Predictor:
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
