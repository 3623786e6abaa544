"""Every ORM model, imported in one place so ``Base.metadata`` is complete (Alembic uses it)."""

from service.approvals.models import Approval
from service.auth.models import Agent, EnrollmentToken
from service.console.models import ConsoleSecret, ConsoleSession
from service.db import Base
from service.hosts.models import Host
from service.recommendations.models import RecommendationLog
from service.registry.models import ModelVersion, PromotionEvent
from service.reports.models import Report

__all__ = [
    "Agent",
    "Approval",
    "Base",
    "ConsoleSecret",
    "ConsoleSession",
    "EnrollmentToken",
    "Host",
    "ModelVersion",
    "PromotionEvent",
    "RecommendationLog",
    "Report",
]
