#!/usr/bin/env bash
# Install the pinned MCP client programs (Codex CLI, Claude Code, MCP Inspector, mcpb) into .ci/node/.
#
# The versions live in .ci/package.json (exact pins; no lock file with download URLs is kept).
# Safe to run twice: when every pinned package is already installed at its pinned version the
# script returns at once. Nothing is installed globally; the tests find the programs in
# .ci/node/node_modules/.bin/ (or in the directory named by BRAVE_MCP_NODE_BIN).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
prefix="${here}/node"
pins="${here}/package.json"

usage() {
    cat <<'USAGE'
Usage: .ci/install-node-tools.sh [--force] [--help]

Installs the npm packages pinned in .ci/package.json into .ci/node/ (local prefix).
  --force   reinstall even when the pinned versions are already present
  --help    show this help
USAGE
}

force=0
while [ "$#" -gt 0 ]; do
    case "$1" in
        --force) force=1 ;;
        -h | --help) usage; exit 0 ;;
        *) printf 'install-node-tools: unknown argument: %s\n' "$1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        printf 'install-node-tools: %s is not installed; the real-client tests will be skipped\n' "$tool" >&2
        exit 1
    fi
done

# Prints the packages whose installed version differs from the pin (one per line); empty when all match.
missing_pins() {
    node - "$pins" "$prefix" <<'JS'
const fs = require("fs");
const path = require("path");
const [pinsFile, prefix] = process.argv.slice(2);
const deps = JSON.parse(fs.readFileSync(pinsFile, "utf8")).dependencies;
for (const [name, version] of Object.entries(deps)) {
  let installed = null;
  try {
    installed = JSON.parse(fs.readFileSync(path.join(prefix, "node_modules", name, "package.json"), "utf8")).version;
  } catch (e) {
    installed = null;
  }
  if (installed !== version) console.log(`${name}@${version}`);
}
JS
}

bin_dir="${prefix}/node_modules/.bin"
if [ "$force" -eq 0 ] && [ -z "$(missing_pins)" ]; then
    for exe in codex claude mcp-inspector mcpb; do
        [ -x "${bin_dir}/${exe}" ] || { force=1; break; }
    done
    if [ "$force" -eq 0 ]; then
        printf 'install-node-tools: pinned tools already installed in %s\n' "$bin_dir"
        exit 0
    fi
fi

mkdir -p "$prefix"
cp "$pins" "${prefix}/package.json"
# --no-package-lock: the pins above are exact; a lock file would only record registry URLs.
# Inspector 2.x declares engines.node >=22 but its CLI mode works on node 20 (engine-strict stays off).
(
    cd "$prefix"
    npm install --no-package-lock --no-audit --no-fund --loglevel=error
)

left="$(missing_pins)"
if [ -n "$left" ]; then
    printf 'install-node-tools: these pins did not install:\n%s\n' "$left" >&2
    exit 1
fi
for exe in codex claude mcp-inspector mcpb; do
    if [ ! -x "${bin_dir}/${exe}" ]; then
        printf 'install-node-tools: %s is missing from %s after install\n' "$exe" "$bin_dir" >&2
        exit 1
    fi
done
printf 'install-node-tools: installed into %s\n' "$bin_dir"
