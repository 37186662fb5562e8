"""Optional MCP Apps widgets: single-file HTML views served as ``ui://`` resources, linked from tools' ``_meta``.

This package is imported only when the UI is switched on (``--ui`` / ``BRAVE_SEARCH_UI=1``), so clients that never
render widgets pay nothing for it. It imports the SDK and the standard library only — never the HTTP client or
the providers — and it does no work at import time: the HTML files are read when a server registers them.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from mcp.server.apps import APP_MIME_TYPE, Apps, ResourceCsp

__all__ = ["APP_MIME_TYPE", "THUMBNAIL_ORIGIN", "WidgetSpec", "apps_extension", "tool_meta", "widgets"]

THUMBNAIL_ORIGIN = "https://imgs.search.brave.com"
"""Brave's image proxy: the only remote origin a widget may load from (thumbnails), declared in its CSP."""
BRIDGE_MARK = "/* bridge */"
"""The line in a widget's script where the shared ``bridge.js`` goes."""
CSP_MARK = "{{csp}}"
"""The CSP meta tag's content in a widget file, filled with the policy for the assembled page."""


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("widgets", name).read_text(encoding="utf-8")


def _hashes(html: str, tag: str) -> str:
    """CSP source expressions for each inline ``<tag>`` body, so only the widget's own code and style run."""
    bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)
    return " ".join("'sha256-" + base64.b64encode(hashlib.sha256(b.encode()).digest()).decode() + "'" for b in bodies)


@dataclass(frozen=True)
class WidgetSpec:
    """One widget: where hosts fetch it, which tools link to it, and what it may load — so all three stay in step."""

    name: str
    tools: tuple[str, ...]
    title: str
    description: str
    resource_domains: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        """The widget's file in ``ui/widgets``: named after the widget."""
        return f"{self.name}.html"

    @property
    def uri(self) -> str:
        """Where hosts fetch the widget (``resources/read``) and where tools' ``_meta`` points."""
        return f"ui://brave-search/{self.file}"

    def html(self) -> str:
        """The widget as one self-contained document: its file with the shared bridge inlined and a CSP that pins
        exactly the resulting script and style by hash, computed here so it can never go stale."""
        page = _read(self.file).replace(BRIDGE_MARK, _read("bridge.js").rstrip("\n"), 1)
        policy = (
            f"default-src 'none'; script-src {_hashes(page, 'script')}; style-src {_hashes(page, 'style')}; "
            f"img-src {' '.join(('data:', *self.resource_domains))}; connect-src 'none'; base-uri 'none'; "
            "form-action 'none'"
        )
        return page.replace(CSP_MARK, policy, 1)

    @property
    def size_bytes(self) -> int:
        """Bytes the host downloads with ``resources/read``, for the docs and the help tool."""
        return len(self.html().encode("utf-8"))

    def csp(self) -> ResourceCsp:
        """The resource's declared CSP: no connections at all, images only from the listed origins."""
        return ResourceCsp(connect_domains=[], resource_domains=list(self.resource_domains))


def widgets() -> tuple[WidgetSpec, ...]:
    """Every widget this server can serve; a function, not a module constant, so nothing runs at import."""
    return (
        WidgetSpec(
            "web",
            ("brave_web_search",),
            "Brave web results",
            "Web, news and video results as selectable rows with paging; image results as a grid.",
            resource_domains=(THUMBNAIL_ORIGIN,),
        ),
        WidgetSpec(
            "places",
            ("brave_local_search",),
            "Brave places",
            "Places with rating, open/closed, hours, address and phone; an offline position sketch.",
        ),
    )


def tool_meta(tool_name: str) -> dict[str, Any] | None:
    """The ``_meta`` a tool carries when the UI is on (``{"ui": {"resourceUri": ...}}``); None for tools without one."""
    for spec in widgets():
        if tool_name in spec.tools:
            return {"ui": {"resourceUri": spec.uri}}
    return None


def _serving(tool_names: Iterable[str] | None) -> tuple[WidgetSpec, ...]:
    """The widgets some enabled tool links to (all of them when no tool list is given)."""
    if tool_names is None:
        return widgets()
    enabled = set(tool_names)
    return tuple(spec for spec in widgets() if enabled.intersection(spec.tools))


def apps_extension(tool_names: Iterable[str] | None = None) -> Apps:
    """The SDK's Apps extension holding the widget resources (each with its ``_meta.ui``: CSP, border).

    ``faces.mcp_server`` serves its resources and advertises its identifier and settings under
    ``capabilities.extensions``; ``MCPServer(extensions=[...])`` takes it as it is (the demo host does). It binds no
    tools: the registry adds :func:`tool_meta` to its own tools. Given ``tool_names`` (the enabled tools), it serves
    only the widgets one of them links to.
    """
    apps = Apps()
    for spec in _serving(tool_names):
        apps.add_html_resource(
            spec.uri,
            spec.html(),
            name=f"brave-search-{spec.name}-widget",
            title=spec.title,
            description=spec.description,
            csp=spec.csp(),
            prefers_border=True,
        )
    return apps
