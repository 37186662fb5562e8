# brave-search-mcp over streamable HTTP, as a non-root user, with /healthz as the health check.
#
#   docker build -t brave-search-mcp .
#   docker run --rm -p 127.0.0.1:8080:8080 \
#     -e BRAVE_SEARCH_HTTP_TOKEN="$(openssl rand -hex 32)" \
#     -e BRAVE_API_KEY_FILE=/run/secrets/brave_api_key \
#     -v "$HOME/.config/brave-search-mcp/api-key:/run/secrets/brave_api_key:ro" \
#     brave-search-mcp
#
# The key goes in by file, as docs/http.md advises (an -e BRAVE_SEARCH_API_KEY shows in docker inspect).
# Binding 0.0.0.0 (needed inside a container) makes BRAVE_SEARCH_HTTP_TOKEN mandatory: without it the server
# refuses to start. See docs/http.md for the Host allowlist (BRAVE_SEARCH_ALLOWED_HOSTS).

FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Everything pyproject.toml names for the wheel: the readme, the license, the package and the skill it ships.
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
COPY skills ./skills
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.12-slim
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 \
    BRAVE_SEARCH_PORT=8080
COPY --from=build /wheels /wheels
# pip compiles bytecode at install time, which saves ~300 ms on every cold start.
RUN pip install /wheels/*.whl && rm -rf /wheels \
    && groupadd --system --gid 10001 brave \
    && useradd --system --uid 10001 --gid brave --create-home --home-dir /home/brave --shell /usr/sbin/nologin brave
# A home of its own: the default state (the rate limiter's numbers, the month's count, breakers) and the cache are
# SQLite files under it, shared by the server's processes; without one they would fall back to memory, with a
# warning. Mount a volume on /home/brave to keep them across restarts.
ENV HOME=/home/brave
USER 10001:10001
WORKDIR /home/brave
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; url = 'http://127.0.0.1:' + os.environ.get('BRAVE_SEARCH_PORT', '8080') + '/healthz'; sys.exit(0 if urllib.request.urlopen(url, timeout=4).status == 200 else 1)"]
CMD ["brave-search-mcp", "--transport", "http", "--host", "0.0.0.0"]
