"""Wire the console into the app: its pages, its static files and its two error pages."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from service.console import approval_pages, fleet_pages, login, model_pages
from service.console.dependencies import ConsolePageError, LoginRequiredError
from service.console.templating import render

STATIC = Path(__file__).resolve().parent / "static"


def install_console(app: FastAPI) -> None:
    app.include_router(login.router)
    app.include_router(fleet_pages.router)
    app.include_router(approval_pages.router)
    app.include_router(model_pages.router)
    app.mount("/console/static", StaticFiles(directory=STATIC), name="console-static")

    async def on_login_required(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, LoginRequiredError)
        query = urlencode({"next": login.safe_next(exc.next_path)})
        return RedirectResponse(
            f"{login.LOGIN}?{query}", status_code=303, headers={"Cache-Control": "no-store"}
        )

    async def on_page_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ConsolePageError)
        return render(
            "error.html",
            {"admin": None, "nav": "", "title": exc.title, "detail": exc.detail},
            status_code=exc.status_code,
        )

    app.add_exception_handler(LoginRequiredError, on_login_required)
    app.add_exception_handler(ConsolePageError, on_page_error)
