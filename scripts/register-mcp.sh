#!/usr/bin/env bash
# Register the brave-search MCP server with Codex and/or Claude Code, safely and repeatably.
# See --help. Backs up what it replaces, never writes the API key into a client config or a backup.
set -euo pipefail

BSM_PROG="register-mcp.sh"
# shellcheck source=scripts/_common.sh
. "$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/_common.sh"

usage() {
    cat <<'USAGE'
Usage: scripts/register-mcp.sh [options]

Registers the stdio server with Codex and/or Claude Code. By default it registers the
installed `brave-search-mcp` command (uv tool install / pipx), by absolute path, so moving
or deleting this checkout does not break the registration. Every prerequisite (client
CLIs, the server command, a test start of the server) is checked before the key file is
written or a client config is touched. An existing entry of the same name is backed up
first and then replaced; the exact rollback command is printed at the end. Safe to run twice.

Options:
  --client CLIENT     codex, claude, all (both, each required) or auto (default:
                      every client whose CLI is on PATH)
  --name NAME         registration name (default: brave-search)
  --scope SCOPE       Claude Code scope: user (default), local or project. Codex has
                      only a global config, so local/project need --client claude.
  --project-dir DIR   project that Claude's local/project scope applies to
                      (default: the current directory)
  --key-mode MODE     file (default): store the key in a 0600 file and register
                        BRAVE_API_KEY_FILE=<path>;
                      env: register no key; the server reads BRAVE_API_KEY from the
                        client's environment (Codex: env_vars = ["BRAVE_API_KEY"];
                        Claude: BRAVE_API_KEY=${BRAVE_API_KEY:-});
                      none: register no key at all (tools answer MISSING_API_KEY
                        until you configure one)
  --no-key            same as --key-mode none
  --key-file PATH     where file mode keeps the key
                      (default: ${XDG_CONFIG_HOME:-~/.config}/brave-search-mcp/api-key,
                      on macOS without it ~/Library/Application Support/brave-search-mcp/api-key:
                      where every brave-search-mcp command looks for it)
  --env NAME=VALUE    pass a BRAVE_SEARCH_* server setting through (repeatable), e.g.
                      --env BRAVE_SEARCH_MAX_LINES=80. BRAVE_SEARCH_API_KEY is refused.
  --backup-dir DIR    where backups go
                      (default: ${XDG_CONFIG_HOME:-~/.config}/brave-search-mcp/backups)
  --install MODE      what to register:
                      tool (default): the installed brave-search-mcp found on PATH
                        (outside this checkout); when there is none it is installed
                        from this checkout with `uv tool install` (not with --no-sync)
                      uvx: `uvx --from SPEC brave-search-mcp`, SPEC pinned to this
                        version (brave-search-mcp==X.Y.Z) unless --uvx-from says
                      checkout: the developer path <repo>/.venv/bin/brave-search-mcp
                        (after `uv sync`); tied to this checkout
  --uvx-from SPEC     package spec for --install uvx (a pinned version, a wheel path)
  --repo DIR          checkout used by --install checkout / tool (default: this script's repo)
  --server-command P  register this absolute executable as is (skips --install)
  --no-sync           install and sync nothing; what is registered must already exist
  -h, --help          show this help

The API key is never read from the command line. File mode takes it from
BRAVE_SEARCH_API_KEY or BRAVE_API_KEY in the environment, else reuses an existing key
file, else asks for it with echo off (only when stdin is a terminal; otherwise it stops
and suggests --no-key or --key-mode env).

Exit status: 0 done, 1 a step failed (message says which), 2 bad usage.
USAGE
}

client_choice="auto"
name="$BSM_DEFAULT_NAME"
scope="user"
project_dir=""
key_mode="file"
key_file=""
backup_dir=""
repo="$BSM_REPO_DEFAULT"
server_command=""
install_mode="tool"
uvx_from=""
do_sync=1
pass_env=()

while [ "$#" -gt 0 ]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --client | --name | --scope | --project-dir | --key-mode | --key-file | --env | --backup-dir | --repo | --server-command | --install | --uvx-from)
            bsm_require_option_value "$1" "$#"
            value="$2"
            case "$1" in
                --client) client_choice="$value" ;;
                --name) name="$value" ;;
                --scope) scope="$value" ;;
                --project-dir) project_dir="$value" ;;
                --key-mode) key_mode="$value" ;;
                --key-file) key_file="$value" ;;
                --env) pass_env+=("$value") ;;
                --backup-dir) backup_dir="$value" ;;
                --repo) repo="$value" ;;
                --server-command) server_command="$value" ;;
                --install) install_mode="$value" ;;
                --uvx-from) uvx_from="$value" ;;
            esac
            shift 2
            ;;
        --client=* | --name=* | --scope=* | --project-dir=* | --key-mode=* | --key-file=* | --env=* | --backup-dir=* | --repo=* | --server-command=* | --install=* | --uvx-from=*)
            set -- "${1%%=*}" "${1#*=}" "${@:2}"
            ;;
        --no-key)
            key_mode="none"
            shift
            ;;
        --no-sync)
            do_sync=0
            shift
            ;;
        --key | --key=* | --api-key | --api-key=* | --brave-api-key | --brave-api-key=*)
            bsm_usage_error "the API key is never taken from the command line (it would end up in shell history and in ps); set BRAVE_API_KEY in the environment or type it at the prompt"
            ;;
        *)
            bsm_usage_error "unknown argument: $1"
            ;;
    esac
done

# ------------------------------------------------------------------------------------------ validation
bsm_validate_name "$name"
bsm_validate_scope "$scope"
case "$key_mode" in
    file | env | none) ;;
    *) bsm_usage_error "invalid --key-mode '$key_mode' (choose file, env or none)" ;;
esac
case "$install_mode" in
    tool | uvx | checkout) ;;
    *) bsm_usage_error "invalid --install '$install_mode' (choose tool, uvx or checkout)" ;;
esac
if [ -n "$uvx_from" ] && [ "$install_mode" != uvx ]; then
    bsm_usage_error "--uvx-from needs --install uvx"
fi
if [ -n "$server_command" ]; then
    case "$server_command" in
        /*) ;;
        *) bsm_usage_error "--server-command must be an absolute path (clients start it from other directories)" ;;
    esac
fi
env_pairs=()
for pair in "${pass_env[@]+"${pass_env[@]}"}"; do
    case "$pair" in
        *=*) ;;
        *) bsm_usage_error "--env needs NAME=VALUE, got '${pair}'" ;;
    esac
    var="${pair%%=*}"
    case "$var" in
        BRAVE_SEARCH_API_KEY)
            bsm_usage_error "--env BRAVE_SEARCH_API_KEY is refused: the key never goes into a client config (use --key-mode file or env)"
            ;;
        BRAVE_SEARCH_*) ;;
        *) bsm_usage_error "--env accepts only BRAVE_SEARCH_* settings, got '${var}'" ;;
    esac
    case "$var" in
        *[!A-Z0-9_]*) bsm_usage_error "invalid variable name '${var}'" ;;
    esac
    case "$pair" in
        *$'\n'* | *$'\r'*) bsm_usage_error "the value of ${var} must be one line" ;;
    esac
    env_pairs+=("$pair")
done

[ -d "$repo" ] || bsm_usage_error "--repo: not a directory: $repo"
repo="$(bsm_physical_dir "$repo")"
if [ -z "$project_dir" ]; then
    project_dir="$(pwd -P)"
else
    [ -d "$project_dir" ] || bsm_usage_error "--project-dir: not a directory: $project_dir"
    project_dir="$(bsm_physical_dir "$project_dir")"
fi
config_dir="$(bsm_config_dir)"
backup_dir="$(bsm_abspath "${backup_dir:-${config_dir}/backups}")"
key_file="$(bsm_abspath "${key_file:-${config_dir}/api-key}")"

if [ "$scope" != user ]; then
    case "$client_choice" in
        codex | all) bsm_usage_error "--scope $scope applies to Claude Code only: Codex keeps MCP servers in one global config; use --client claude" ;;
    esac
fi
bsm_resolve_clients "$client_choice"
if [ "$scope" != user ]; then
    for client in "${BSM_CLIENTS[@]}"; do
        [ "$client" != codex ] ||
            bsm_usage_error "--scope $scope applies to Claude Code only: Codex keeps MCP servers in one global config; add --client claude"
    done
fi

if [ "$scope" = project ] && [ "$key_mode" = file ]; then
    bsm_warn "project scope writes ${project_dir}/.mcp.json, which is usually shared: it will name your key file's path (not the key); --key-mode env keeps it user-neutral"
fi

# ------------------------------------------------------------------------------------------ prepare
# Everything the registration needs is found (or installed) and test-started here, before the key
# file is written: a failing prerequisite leaves nothing behind.
server_args=()

# The installed command on PATH, unless it lives inside the checkout (an activated dev venv).
installed_command() {
    local found dir
    found="$(command -v brave-search-mcp 2>/dev/null || true)"
    case "$found" in
        /*) ;;
        *) return 1 ;;
    esac
    dir="$(cd -- "$(dirname -- "$found")" && pwd -P)"
    case "${dir}/" in
        "${repo}/"*) return 1 ;;
    esac
    printf '%s\n' "$found"
}

bsm_pick_python "$repo"
if [ -n "$server_command" ]; then
    [ -x "$server_command" ] || bsm_die "--server-command is not an executable file: $server_command"
elif [ "$install_mode" = tool ]; then
    if server_command="$(installed_command)"; then
        echo "Using the installed ${server_command}."
    elif [ "$do_sync" -eq 1 ]; then
        bsm_has_cli uv || bsm_die "brave-search-mcp is not installed and uv is not on PATH to install it; install one of them (pip install uv), or use pipx install ${repo}"
        [ -f "${repo}/pyproject.toml" ] || bsm_die "brave-search-mcp is not installed and ${repo} is not a checkout to install it from"
        echo "Installing brave-search-mcp from ${repo} as a uv tool (uv tool install)..."
        bsm_timeout 900 uv tool install --force --reinstall --quiet --compile-bytecode "$repo" ||
            bsm_die "'uv tool install ${repo}' failed"
        server_command="$(uv tool dir --bin)/brave-search-mcp"
        [ -x "$server_command" ] || bsm_die "uv tool install did not create ${server_command}"
        echo "  installed ${server_command}"
    else
        bsm_die "brave-search-mcp is not installed (not on PATH outside this checkout); install it: uv tool install brave-search-mcp (or: uv tool install ${repo}, pipx install ${repo}); or drop --no-sync, or use --install checkout"
    fi
elif [ "$install_mode" = uvx ]; then
    server_command="$(command -v uvx 2>/dev/null || true)"
    case "$server_command" in
        /*) ;;
        *) bsm_die "--install uvx needs uvx on PATH (pip install uv)" ;;
    esac
    if [ -z "$uvx_from" ]; then
        version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "${repo}/src/brave_search_mcp/_version.py" 2>/dev/null || true)"
        [ -n "$version" ] || bsm_die "cannot read the version from ${repo}; pass --uvx-from brave-search-mcp==X.Y.Z"
        uvx_from="brave-search-mcp==${version}"
    fi
    server_args=(--from "$uvx_from" brave-search-mcp)
else
    if [ "$do_sync" -eq 1 ]; then
        bsm_has_cli uv || bsm_die "uv is not on PATH; install it (pip install uv) or create ${repo}/.venv yourself and pass --no-sync"
        echo "Preparing ${repo}/.venv (uv sync)..."
        # --inexact keeps extra packages (e.g. a developer's test tools) installed.
        bsm_timeout 900 uv sync --directory "$repo" --inexact --compile-bytecode --quiet ||
            bsm_die "'uv sync --directory $repo' failed"
    fi
    server_command="${repo}/.venv/bin/brave-search-mcp"
    [ -x "$server_command" ] ||
        bsm_die "${server_command} does not exist; run 'uv sync' in ${repo} (or drop --no-sync)"
    bsm_pick_python "$repo"
    # Compile the project's own sources too, so the first start does not pay for it.
    "${repo}/.venv/bin/python" -m compileall -q "${repo}/src" >/dev/null 2>&1 || true
fi

# The test start runs without any key (tools/list needs none), so the key file waits for it.
smoke_env=()
for pair in "${env_pairs[@]+"${env_pairs[@]}"}"; do
    smoke_env+=(--env "$pair")
done
echo "Checking that the server starts..."
smoke_out="$(env -u BRAVE_API_KEY -u BRAVE_SEARCH_API_KEY -u BRAVE_API_KEY_FILE \
    "$BSM_PY" "${BSM_SCRIPT_DIR}/_mcp_config.py" smoke --timeout 120 "${smoke_env[@]+"${smoke_env[@]}"}" -- "$server_command" "${server_args[@]+"${server_args[@]}"}" 2>&1)" ||
    bsm_die "the server did not start: ${smoke_out}"
echo "  ${smoke_out}"

# ------------------------------------------------------------------------------------------ the key
# Reads the key into the variable `key` without it ever touching argv.
key=""
obtain_key() {
    key="${BRAVE_SEARCH_API_KEY:-${BRAVE_API_KEY:-}}"
    if [ -n "$key" ]; then
        key_origin="the environment"
        return 0
    fi
    if [ -s "$key_file" ]; then
        key_origin="existing"
        return 0
    fi
    if [ -t 0 ]; then
        printf 'Brave Search API key (input hidden; get one at https://api-dashboard.search.brave.com): ' >&2
        IFS= read -r -s key || key=""
        printf '\n' >&2
        [ -n "$key" ] || bsm_die "no key entered; run again, or use --no-key to register without one"
        key_origin="the prompt"
        return 0
    fi
    bsm_die "no API key: set BRAVE_API_KEY (or BRAVE_SEARCH_API_KEY) in the environment, keep one in ${key_file}, or pass --no-key / --key-mode env (stdin is not a terminal, so there is no prompt)"
}

# Writes the key with shell builtins only (printf is a builtin: the key never reaches argv).
store_key() {
    case "$key" in
        *[[:space:]]*) bsm_die "the API key contains whitespace; check what you pasted" ;;
    esac
    local dir tmp
    dir="$(dirname -- "$key_file")"
    mkdir -p -- "$dir"
    chmod 700 -- "$dir" 2>/dev/null || true
    if [ -f "$key_file" ] && [ "$(cat -- "$key_file")" = "$key" ]; then
        chmod 600 -- "$key_file"
        return 0
    fi
    tmp="$(umask 077 && mktemp "${dir}/.api-key.XXXXXX")"
    (umask 077 && printf '%s\n' "$key" >"$tmp")
    chmod 600 -- "$tmp"
    mv -f -- "$tmp" "$key_file"
}

key_origin=""
server_env=()
if [ "$key_mode" = file ]; then
    obtain_key
    if [ "$key_origin" = existing ]; then
        chmod 600 -- "$key_file"
        echo "Using the API key already stored in ${key_file}."
    else
        store_key
        echo "Stored the API key from ${key_origin} in ${key_file} (mode 0600)."
    fi
    key=""
    server_env+=("BRAVE_API_KEY_FILE=${key_file}")
elif [ "$key_mode" = env ]; then
    if [ -z "${BRAVE_API_KEY:-}" ]; then
        bsm_warn "BRAVE_API_KEY is not set here; the clients must see it in their environment when they start the server"
    fi
fi
server_env+=("${env_pairs[@]+"${env_pairs[@]}"}")

# ------------------------------------------------------------------------------------------ register
backups=()

register_codex() {
    bsm_ensure_codex_home
    local config backup existed=0
    config="$(bsm_codex_config)"
    if bsm_codex_has "$name"; then existed=1; fi
    backup="$(bsm_helper backup --client codex --dir "$backup_dir" --config "$config" --name "$name" --reason register)" ||
        bsm_die "could not back up ${config}"
    backups+=("$backup")
    if [ "$existed" -eq 1 ]; then
        bsm_run_client "codex mcp remove $name" codex mcp remove "$name"
    fi
    local add_args=(mcp add "$name") pair
    for pair in "${server_env[@]+"${server_env[@]}"}"; do
        add_args+=(--env "$pair")
    done
    add_args+=(-- "$server_command" "${server_args[@]+"${server_args[@]}"}")
    bsm_run_client "codex mcp add $name" codex "${add_args[@]}"
    local check_args=(codex-check --name "$name" --command "$server_command") arg
    for arg in "${server_args[@]+"${server_args[@]}"}"; do
        check_args+=("--arg=${arg}")
    done
    for pair in "${server_env[@]+"${server_env[@]}"}"; do
        check_args+=(--env "$pair")
    done
    if [ "$key_mode" = env ]; then
        bsm_helper codex-set-env-vars --config "$config" --name "$name" --var BRAVE_API_KEY ||
            bsm_die "could not add env_vars to ${config}"
        check_args+=(--var BRAVE_API_KEY)
    fi
    bsm_run_client "codex mcp get --json $name" codex mcp get --json "$name"
    # Codex prints a PATH-alias warning on stderr; keep only the JSON object.
    printf '%s\n' "$BSM_OUT" | sed -n '/^{/,/^}/p' | bsm_helper "${check_args[@]}" ||
        bsm_die "Codex did not record the entry as intended"
    if [ "$existed" -eq 1 ]; then
        echo "Codex: replaced '${name}' in ${config} (previous file saved in ${backup})."
    else
        echo "Codex: registered '${name}' in ${config}."
    fi
}

register_claude() {
    local config backup entry json
    config="$(bsm_claude_config "$scope" "$project_dir")"
    entry="$(bsm_helper claude-entry --config "$config" --scope "$scope" --project "$project_dir" --name "$name")" ||
        bsm_die "could not read ${config}"
    backup="$(bsm_helper backup --client claude --dir "$backup_dir" --config "$config" --name "$name" \
        --scope "$scope" --project "$project_dir" --reason register)" || bsm_die "could not back up the Claude entry"
    backups+=("$backup")
    if [ "$entry" != null ]; then
        bsm_run_client "claude mcp remove $name -s $scope" bsm_claude "$project_dir" mcp remove "$name" -s "$scope"
    fi
    local json_args=(claude-json --command "$server_command") pair arg
    for arg in "${server_args[@]+"${server_args[@]}"}"; do
        json_args+=("--arg=${arg}")
    done
    for pair in "${server_env[@]+"${server_env[@]}"}"; do
        json_args+=(--env "$pair")
    done
    if [ "$key_mode" = env ]; then
        # Expanded by Claude Code at start-up; the ":-" form gives "" (not the literal text) when unset.
        # shellcheck disable=SC2016
        json_args+=(--env 'BRAVE_API_KEY=${BRAVE_API_KEY:-}')
    fi
    json="$(bsm_helper "${json_args[@]}")"
    bsm_run_client "claude mcp add-json $name" bsm_claude "$project_dir" mcp add-json "$name" "$json" -s "$scope"
    bsm_helper claude-check --config "$config" --scope "$scope" --project "$project_dir" --name "$name" --expect "$json" ||
        bsm_die "Claude Code did not record the entry as intended"
    if [ "$entry" != null ]; then
        echo "Claude Code: replaced '${name}' (${scope} scope, ${config}; previous entry saved in ${backup})."
    else
        echo "Claude Code: registered '${name}' (${scope} scope, ${config})."
    fi
    # `claude mcp get` really starts the server; it exits 0 even when that fails, so read its status line.
    bsm_run_client "claude mcp get $name" bsm_claude "$project_dir" mcp get "$name"
    local status
    status="$(printf '%s\n' "$BSM_OUT" | grep -m1 'Status:' || true)"
    case "$status" in
        *Connected*) echo "  health check:${status#*Status:}" ;;
        *"Pending approval"* | *"pending approval"*)
            echo "  health check: pending approval (project scope: run 'claude' in ${project_dir} and approve '${name}')"
            ;;
        *)
            bsm_err "Claude Code could not start the server:${status#*Status:}"
            bsm_err "details: ~/.cache/claude-cli-nodejs/*/mcp-logs-${name}/"
            bsm_print_rollback "${backups[@]}" >&2
            exit 1
            ;;
    esac
    if ! printf '%s\n' "$BSM_OUT" | grep -qF "Command: ${server_command}"; then
        bsm_warn "another scope's '${name}' entry takes precedence over the one just written; see 'claude mcp get ${name}'"
    fi
}

for client in "${BSM_CLIENTS[@]}"; do
    "register_${client}"
done

echo
echo "Done. Start a new Codex / Claude Code session to use the brave-search tools."
[ "$key_mode" != none ] || echo "No API key registered: the tools answer MISSING_API_KEY until you run this again with a key (or use --key-mode env)."
bsm_print_rollback "${backups[@]}"
