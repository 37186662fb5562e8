#!/usr/bin/env bash
# Pack a self-contained MCPB bundle (dist/brave-search.mcpb) that runs offline on this platform.
# See --help. The bundle holds the package and every dependency in lib/, built from a wheel.
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd -- "${here}/.." && pwd -P)"
prog="pack-mcpb.sh"

usage() {
    cat <<'USAGE'
Usage: scripts/pack-mcpb.sh [--out FILE] [--python PYTHON] [--mcpb PATH]

Builds the wheel, installs it with all its dependencies into lib/ of a clean staging
folder (no checkout files: no tests, testkit, bench, docs, dist or .venv), adds
server/main.py and manifest.json, then runs `mcpb pack` (which validates the manifest).

The dependencies' own test folders (tests/, test/ inside lib/) are left out.

The bundle is for this platform and this Python minor version (pydantic-core is a
compiled extension): its manifest says so in compatibility.platforms and
compatibility.runtimes.python. Pack once per platform/Python you ship.

Options:
  --out FILE       where to write the bundle (default: dist/brave-search.mcpb)
  --python PYTHON  interpreter the bundle targets (default: python3 on PATH)
  --mcpb PATH      the mcpb program (default: $BRAVE_MCP_NODE_BIN/mcpb,
                   .ci/node/node_modules/.bin/mcpb, or mcpb on PATH; when none
                   is there: npx -y @anthropic-ai/mcpb@<the version pinned in
                   .ci/package.json>, which needs node and npm)
  -h, --help       show this help

Exit status: 0 done, 1 a step failed, 2 bad usage.
USAGE
}

die() {
    printf '%s: error: %s\n' "$prog" "$*" >&2
    exit 1
}
usage_error() {
    printf '%s: error: %s\nRun %s --help for usage.\n' "$prog" "$*" "$prog" >&2
    exit 2
}

out="${repo}/dist/brave-search.mcpb"
python="python3"
mcpb=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --out | --python | --mcpb)
            [ "$#" -ge 2 ] || usage_error "option $1 needs a value"
            case "$1" in
                --out) out="$2" ;;
                --python) python="$2" ;;
                --mcpb) mcpb="$2" ;;
            esac
            shift 2
            ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done

command -v uv >/dev/null 2>&1 || die "uv is not on PATH (pip install uv)"
python="$(command -v "$python" 2>/dev/null)" || die "python not found: ${python}"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' ||
    die "${python} is older than Python 3.11"
if [ -z "$mcpb" ]; then
    for candidate in "${BRAVE_MCP_NODE_BIN:-}/mcpb" "${repo}/.ci/node/node_modules/.bin/mcpb" "$(command -v mcpb 2>/dev/null || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && [ "$candidate" != /mcpb ]; then
            mcpb="$candidate"
            break
        fi
    done
fi
if [ -n "$mcpb" ]; then
    [ -x "$mcpb" ] || die "--mcpb ${mcpb} is not an executable"
    mcpb_cmd=("$mcpb")
else
    # No installed mcpb: the pinned version through npx (downloaded once into npm's cache).
    pin="$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["dependencies"]["@anthropic-ai/mcpb"])' \
        "${repo}/.ci/package.json")" || die "cannot read the mcpb version pinned in .ci/package.json"
    command -v npx >/dev/null 2>&1 ||
        die "mcpb not found and npx is not on PATH: install node and npm, run .ci/install-node-tools.sh, or pass --mcpb PATH"
    mcpb_cmd=(npx -y "@anthropic-ai/mcpb@${pin}")
fi
case "$out" in
    /*) ;;
    *) out="$(pwd -P)/${out}" ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/brave-mcpb.XXXXXX")"
trap 'rm -rf -- "$work"' EXIT
stage="${work}/bundle"
mkdir -p "${stage}/server" "${stage}/lib" "${work}/wheel"

echo "Building the wheel..."
uv build --wheel --quiet --out-dir "${work}/wheel" "$repo" || die "uv build failed"
wheel="$(ls "${work}/wheel"/brave_search_mcp-*.whl)"

echo "Installing it and its dependencies into lib/ for $("$python" -c 'import sys; print(sys.version.split()[0])')..."
uv pip install --quiet --target "${stage}/lib" --python "$python" --compile-bytecode "$wheel" ||
    die "uv pip install --target failed"
# Console-script launchers in lib/bin name this machine's interpreter; the bundle starts server/main.py.
rm -rf -- "${stage}/lib/bin"
# The dependencies' own test suites (jsonschema/tests, referencing/tests, ...) never run in the bundle.
# Only folders of other distributions go: brave_search_mcp and every .dist-info record stay whole.
dropped="$(find "${stage}/lib" -mindepth 1 -type d \( -name tests -o -name test \) \
    -not -path "${stage}/lib/brave_search_mcp/*" -not -path "*.dist-info/*" -prune -print)"
if [ -n "$dropped" ]; then
    while IFS= read -r folder; do rm -rf -- "$folder"; done <<<"$dropped"
    echo "Left out $(printf '%s\n' "$dropped" | wc -l | tr -d ' ') test folders of dependencies."
fi

cp -- "${here}/mcpb_main.py" "${stage}/server/main.py"
cp -- "${repo}/LICENSE" "${repo}/README.md" "${stage}/"
# The repository manifest, narrowed to what this bundle can run on.
"$python" - "${repo}/manifest.json" "${stage}/manifest.json" <<'PY'
import json, sys
source, target = sys.argv[1], sys.argv[2]
manifest = json.load(open(source, encoding="utf-8"))
platform = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
minor = f"{sys.version_info.major}.{sys.version_info.minor}"
manifest.setdefault("compatibility", {})["platforms"] = [platform]
manifest["compatibility"].setdefault("runtimes", {})["python"] = f">={minor},<{sys.version_info.major}.{sys.version_info.minor + 1}"
json.dump(manifest, open(target, "w", encoding="utf-8"), indent=2, ensure_ascii=False)
PY

mkdir -p "$(dirname -- "$out")"
rm -f -- "$out"
echo "Packing with ${mcpb_cmd[*]} $("${mcpb_cmd[@]}" --version 2>/dev/null || true)..."
(cd "$work" && "${mcpb_cmd[@]}" pack "$stage" "$out") >"${work}/pack.log" 2>&1 || {
    cat "${work}/pack.log" >&2
    die "mcpb pack failed"
}
grep -E 'validation|package size|total files' "${work}/pack.log" || true
echo "Wrote ${out}"
