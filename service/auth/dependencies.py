"""Auth dependencies: ``AdminAuth``, ``AgentAuth`` (agent only) and ``AnyAuth``; the hot
routes' ``HotAgentAuth`` / ``HotAnyAuth`` check agent tokens through the token cache."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.auth.service import Principal, authenticate, authenticate_hot
from service.auth.token_cache import TokenCache
from service.config import Settings
from service.db import SessionDep
from service.errors import ForbiddenError
from service.hot_db import HotDBDep

bearer = HTTPBearer(auto_error=False, description="The admin token or an agent token.")


def get_principal(
    request: Request,
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    settings: Settings = request.app.state.settings
    token = credentials.credentials if credentials is not None else None
    return authenticate(
        session,
        token,
        admin_token=settings.admin_token.get_secret_value(),
        cache=request.app.state.token_cache,
    )


async def get_principal_hot(
    request: Request,
    hot_db: HotDBDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    settings: Settings = request.app.state.settings
    token = credentials.credentials if credentials is not None else None
    cache: TokenCache = request.app.state.token_cache
    return await authenticate_hot(
        hot_db, token, admin_token=settings.admin_token.get_secret_value(), cache=cache
    )


def _agent_only(principal: Principal) -> Principal:
    if principal.is_admin or principal.agent_id is None:
        raise ForbiddenError("this route needs an agent token (reports belong to a host)")
    return principal


async def require_agent_hot(
    principal: Annotated[Principal, Depends(get_principal_hot)],
) -> Principal:
    return _agent_only(principal)


def require_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.is_admin:
        raise ForbiddenError("this route needs the admin token")
    return principal


def require_agent(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    return _agent_only(principal)


AnyAuth = Annotated[Principal, Depends(get_principal)]
AdminAuth = Annotated[Principal, Depends(require_admin)]
AgentAuth = Annotated[Principal, Depends(require_agent)]
HotAnyAuth = Annotated[Principal, Depends(get_principal_hot)]
HotAgentAuth = Annotated[Principal, Depends(require_agent_hot)]
