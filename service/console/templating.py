"""The console's Jinja2 environment, its filters and the HTML response every page goes out in."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from service.db import utcnow

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: Scripts and styles come only from the console's own static files (no inline script).
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; "
    "base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def gain_text(ratio: float | None) -> str:
    """A throughput ratio as a signed percentage: 1.183 → "+18.3 %"."""
    if ratio is None:
        return "—"
    return f"{(ratio - 1.0) * 100:+.1f} %"


def age_text(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return "never"
    seconds = max(0.0, ((now or utcnow()) - when).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def time_text(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC") if when is not None else "—"


def number_text(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def tuple_text(values: dict[str, Any] | None) -> str:
    if not values:
        return "—"
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items()))


def json_script(value: Any) -> Markup:
    """JSON safe inside <script type="application/json"> (no closing tag can appear)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        gain=gain_text,
        age=age_text,
        when=time_text,
        num=number_text,
        knobs=tuple_text,
        json_script=json_script,
    )
    return env


ENV = _environment()


def render(name: str, context: dict[str, Any], *, status_code: int = 200) -> HTMLResponse:
    html = ENV.get_template(name).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)
