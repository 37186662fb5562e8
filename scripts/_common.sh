# shellcheck shell=bash
# Shared helpers of register-mcp.sh, uninstall-mcp.sh and restore-mcp-from-backup.sh.
# Sourced, never run. Callers set BSM_PROG (their name) before sourcing and use `set -euo pipefail`.
# Nothing here ever receives the API key: only the path of the key file travels to other programs.

# shellcheck disable=SC2034 # BSM_REPO_DEFAULT and BSM_DEFAULT_NAME are used by the sourcing scripts
BSM_SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
BSM_REPO_DEFAULT="$(cd -- "${BSM_SCRIPT_DIR}/.." && pwd -P)"
BSM_DEFAULT_NAME="brave-search"
BSM_CLIENT_TIMEOUT="${BSM_CLIENT_TIMEOUT:-90}"

bsm_err() { printf '%s: error: %s\n' "${BSM_PROG}" "$*" >&2; }
bsm_warn() { printf '%s: warning: %s\n' "${BSM_PROG}" "$*" >&2; }
bsm_die() {
    bsm_err "$*"
    exit 1
}
bsm_usage_error() {
    bsm_err "$*"
    printf "Run '%s --help' for usage.\n" "${BSM_PROG}" >&2
    exit 2
}

# The per-user folder for the key file and backups: the folder the server reads its default key file from
# (user_files.py's user_config_dir, platformdirs' rule): an absolute XDG_CONFIG_HOME, else ~/.config
# (~/Library/Application Support on macOS).
bsm_config_dir() {
    local base="${XDG_CONFIG_HOME:-}"
    case "$base" in
        /*) ;;
        *)
            [ -n "${HOME:-}" ] || bsm_die "neither XDG_CONFIG_HOME nor HOME is set"
            if [ "$(uname -s 2>/dev/null || true)" = Darwin ]; then
                base="${HOME}/Library/Application Support"
            else
                base="${HOME}/.config"
            fi
            ;;
    esac
    printf '%s/brave-search-mcp\n' "$base"
}

# Makes a path absolute without requiring it to exist.
bsm_abspath() {
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s/%s\n' "$(pwd -P)" "$1" ;;
    esac
}

# Resolves an existing directory to its physical path (Claude keys its local scope to that).
bsm_physical_dir() {
    [ -d "$1" ] || bsm_die "not a directory: $1"
    (cd -- "$1" && pwd -P)
}

bsm_require_option_value() {
    # $1 option, $2 number of remaining args (incl. the option)
    [ "$2" -ge 2 ] || bsm_usage_error "option $1 needs a value"
}

bsm_validate_name() {
    case "$1" in
        "" | *[!A-Za-z0-9_-]*) bsm_usage_error "invalid server name '$1': use letters, digits, '-' and '_' (both clients accept these)" ;;
    esac
    [ "${#1}" -le 64 ] || bsm_usage_error "server name longer than 64 characters"
}

bsm_validate_scope() {
    case "$1" in
        user | local | project) ;;
        *) bsm_usage_error "invalid --scope '$1' (choose user, local or project)" ;;
    esac
}

# Chooses the Python that runs _mcp_config.py: the project venv's, else python3 (3.8 or newer).
bsm_pick_python() {
    local repo="$1"
    if [ -x "${repo}/.venv/bin/python" ]; then
        BSM_PY="${repo}/.venv/bin/python"
    elif command -v python3 >/dev/null 2>&1; then
        BSM_PY="$(command -v python3)"
    else
        bsm_die "python3 is needed to edit client configs and backups; install it or create the venv first"
    fi
    "$BSM_PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)' ||
        bsm_die "$BSM_PY is older than Python 3.8"
}

bsm_helper() { "$BSM_PY" "${BSM_SCRIPT_DIR}/_mcp_config.py" "$@"; }

# Runs a client command with a time limit (when coreutils' timeout exists; macOS may lack it).
# stdin is /dev/null: timeout puts the command in its own process group, and a client that touches
# the terminal from there would be stopped (SIGTTIN/SIGTTOU) when the script runs in a terminal.
bsm_timeout() {
    local seconds="$1"
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout "$seconds" "$@" </dev/null
    else
        "$@" </dev/null
    fi
}

bsm_has_cli() { command -v "$1" >/dev/null 2>&1; }

# Where to get the client CLIs: the versions this project is tested with (.ci/package.json), installed into
# the checkout by .ci/install-node-tools.sh (nothing global), and the PATH line that makes them found.
# $1: the executable to look for there; $2: how to name it in the message (default: $1).
bsm_cli_hint() {
    local bin="${BSM_REPO_DEFAULT}/.ci/node/node_modules/.bin"
    if [ -x "${bin}/$1" ]; then
        printf "the pinned %s: installed in %s, which is not on PATH: export PATH=\"%s:\$PATH\"" "${2:-$1}" "$bin" "$bin"
    else
        printf "install the pinned versions into this checkout (needs node and npm; nothing global): %s && %s" \
            "${BSM_REPO_DEFAULT}/.ci/install-node-tools.sh" "export PATH=\"${bin}:\$PATH\""
    fi
    printf ", then run %s again" "$BSM_PROG"
}

bsm_require_cli() {
    case "$1" in
        codex) bsm_has_cli codex || bsm_die "the Codex CLI 'codex' is not on PATH; $(bsm_cli_hint codex)" ;;
        claude) bsm_has_cli claude || bsm_die "the Claude Code CLI 'claude' is not on PATH; $(bsm_cli_hint claude)" ;;
    esac
}

# Sets BSM_CLIENTS from --client: auto = every client whose CLI is installed; all = both, required.
bsm_resolve_clients() {
    BSM_CLIENTS=()
    case "$1" in
        codex | claude)
            bsm_require_cli "$1"
            BSM_CLIENTS=("$1")
            ;;
        all)
            bsm_require_cli codex
            bsm_require_cli claude
            BSM_CLIENTS=(codex claude)
            ;;
        auto)
            if bsm_has_cli codex; then BSM_CLIENTS+=(codex); fi
            if bsm_has_cli claude; then BSM_CLIENTS+=(claude); fi
            [ "${#BSM_CLIENTS[@]}" -gt 0 ] ||
                bsm_die "neither 'codex' nor 'claude' is on PATH; $(bsm_cli_hint codex "codex and claude")"
            ;;
        *) bsm_usage_error "invalid --client '$1' (choose codex, claude, all or auto)" ;;
    esac
}

bsm_codex_home() { printf '%s\n' "${CODEX_HOME:-${HOME}/.codex}"; }
bsm_codex_config() { printf '%s/config.toml\n' "$(bsm_codex_home)"; }

# Codex refuses to start when CODEX_HOME does not exist.
bsm_ensure_codex_home() {
    local home
    home="$(bsm_codex_home)"
    if [ ! -d "$home" ]; then
        mkdir -p "$home"
        chmod 700 "$home"
    fi
}

# The file that holds a Claude scope's servers: user/local in .claude.json, project in <dir>/.mcp.json.
bsm_claude_config() {
    local scope="$1" project="$2"
    if [ "$scope" = project ]; then
        printf '%s/.mcp.json\n' "$project"
    else
        printf '%s/.claude.json\n' "${CLAUDE_CONFIG_DIR:-${HOME}}"
    fi
}

# Runs a client command; prints its output and dies when it fails. Output goes to BSM_OUT.
bsm_run_client() {
    local what="$1"
    shift
    local rc=0
    if declare -F "$1" >/dev/null; then
        BSM_OUT="$("$@" 2>&1)" || rc=$?
    else
        BSM_OUT="$(bsm_timeout "$BSM_CLIENT_TIMEOUT" "$@" 2>&1)" || rc=$?
    fi
    if [ "$rc" -ne 0 ]; then
        printf '%s\n' "$BSM_OUT" | grep -v 'could not create PATH aliases' >&2 || true
        bsm_die "$what failed (exit $rc)"
    fi
}

# Runs a Claude command from the project directory its local/project scopes are keyed to.
bsm_claude() {
    local project="$1"
    shift
    (cd -- "$project" && bsm_timeout "$BSM_CLIENT_TIMEOUT" claude "$@")
}

# Whether Codex has a server of that name: 0 yes, 1 no; dies when Codex itself fails.
bsm_codex_has() {
    local name="$1" rc=0 out
    out="$(bsm_timeout "$BSM_CLIENT_TIMEOUT" codex mcp get --json "$name" 2>&1)" || rc=$?
    if [ "$rc" -eq 0 ]; then
        return 0
    fi
    if printf '%s\n' "$out" | grep -q "No MCP server named"; then
        return 1
    fi
    printf '%s\n' "$out" | grep -v 'could not create PATH aliases' >&2 || true
    bsm_die "'codex mcp get $name' failed (exit $rc)"
}

# Prints the restore command for the backups made in this run.
bsm_print_rollback() {
    [ "$#" -gt 0 ] || return 0
    local cmd
    cmd="$(printf '%q' "${BSM_SCRIPT_DIR}/restore-mcp-from-backup.sh")"
    local file
    for file in "$@"; do
        cmd="${cmd} $(printf '%q' "$file")"
    done
    printf '\nTo undo this, run:\n  %s\n' "$cmd"
}
