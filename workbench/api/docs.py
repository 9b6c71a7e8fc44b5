"""``/docs`` without a network: Swagger UI's files are served from the installed
``fastapi-offline`` package (Swagger UI 5, which reads OpenAPI 3.1), never from a CDN. When
that package is missing the page is off and ``/openapi.json`` stays.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS_URL = "/docs/assets"
ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css",
          "favicon.png": "image/png"}


def swagger_assets() -> Path | None:
    """The folder holding Swagger UI's files, or None when no package ships them."""
    try:
        folder = Path(str(resources.files("fastapi_offline") / "static"))
    except ModuleNotFoundError:
        return None
    return folder if all((folder / name).is_file() for name in ASSETS) else None


def add_docs(app: FastAPI, docs_url: str = "/docs") -> bool:
    """Serve Swagger UI at ``docs_url`` from local files; False (and no page) when the
    files are not installed. The app must be made with ``docs_url=None``."""
    folder = swagger_assets()
    if folder is None or app.openapi_url is None:
        return False
    redirect = f"{docs_url}/oauth2-redirect"

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=redirect, swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon.png")

    @app.get(redirect, include_in_schema=False)
    async def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(ASSETS_URL + "/{name}", include_in_schema=False)
    async def swagger_asset(name: str) -> FileResponse:
        if name not in ASSETS:  # a fixed list: no path from the request reaches the disk
            raise HTTPException(404, "no such docs asset")
        return FileResponse(folder / name, media_type=ASSETS[name],
                            headers={"Cache-Control": "public, max-age=86400"})

    return True
