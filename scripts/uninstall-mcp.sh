#!/usr/bin/env bash
# Remove the brave-search MCP server registration from Codex and/or Claude Code (backed up first).
# See --help. Removing something that is not there is reported, not an error.
set -euo pipefail

BSM_PROG="uninstall-mcp.sh"
# shellcheck source=scripts/_common.sh
. "$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/_common.sh"

usage() {
    cat <<'USAGE'
Usage: scripts/uninstall-mcp.sh [options]

Backs up and removes the server entry from each client, then prints how to restore it.
A client that has no such entry is reported and skipped (exit status stays 0).

Options:
  --client CLIENT     codex, claude, all (both, each required) or auto (default:
                      every client whose CLI is on PATH)
  --name NAME         registration name (default: brave-search)
  --scope SCOPE       Claude Code scope to remove from: user (default), local or project
  --project-dir DIR   project of Claude's local/project scope (default: current directory)
  --backup-dir DIR    where backups go
                      (default: ${XDG_CONFIG_HOME:-~/.config}/brave-search-mcp/backups)
  --remove-key        also delete the stored key file
  --key-file PATH     the key file --remove-key deletes
                      (default: ${XDG_CONFIG_HOME:-~/.config}/brave-search-mcp/api-key,
                      on macOS without it ~/Library/Application Support/brave-search-mcp/api-key:
                      where every brave-search-mcp command looks for it)
  -h, --help          show this help

Exit status: 0 done (also when nothing was registered), 1 a step failed, 2 bad usage.
USAGE
}

client_choice="auto"
name="$BSM_DEFAULT_NAME"
scope="user"
project_dir=""
backup_dir=""
remove_key=0
key_file=""

while [ "$#" -gt 0 ]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --client | --name | --scope | --project-dir | --backup-dir | --key-file)
            bsm_require_option_value "$1" "$#"
            case "$1" in
                --client) client_choice="$2" ;;
                --name) name="$2" ;;
                --scope) scope="$2" ;;
                --project-dir) project_dir="$2" ;;
                --backup-dir) backup_dir="$2" ;;
                --key-file) key_file="$2" ;;
            esac
            shift 2
            ;;
        --client=* | --name=* | --scope=* | --project-dir=* | --backup-dir=* | --key-file=*)
            set -- "${1%%=*}" "${1#*=}" "${@:2}"
            ;;
        --remove-key)
            remove_key=1
            shift
            ;;
        *) bsm_usage_error "unknown argument: $1" ;;
    esac
done

bsm_validate_name "$name"
bsm_validate_scope "$scope"
if [ -z "$project_dir" ]; then
    project_dir="$(pwd -P)"
else
    [ -d "$project_dir" ] || bsm_usage_error "--project-dir: not a directory: $project_dir"
    project_dir="$(bsm_physical_dir "$project_dir")"
fi
config_dir="$(bsm_config_dir)"
backup_dir="$(bsm_abspath "${backup_dir:-${config_dir}/backups}")"
key_file="$(bsm_abspath "${key_file:-${config_dir}/api-key}")"
bsm_resolve_clients "$client_choice"
bsm_pick_python "$BSM_REPO_DEFAULT"

backups=()

uninstall_codex() {
    local config backup
    config="$(bsm_codex_config)"
    if [ ! -d "$(bsm_codex_home)" ] || ! bsm_codex_has "$name"; then
        echo "Codex: no server named '${name}' (nothing to remove)."
        return 0
    fi
    backup="$(bsm_helper backup --client codex --dir "$backup_dir" --config "$config" --name "$name" --reason uninstall)" ||
        bsm_die "could not back up ${config}"
    backups+=("$backup")
    bsm_run_client "codex mcp remove $name" codex mcp remove "$name"
    if bsm_codex_has "$name"; then
        bsm_die "Codex still lists '${name}' after 'codex mcp remove' (is it defined in a project .codex/config.toml?)"
    fi
    echo "Codex: removed '${name}' from ${config} (previous file saved in ${backup})."
}

uninstall_claude() {
    local config backup entry
    config="$(bsm_claude_config "$scope" "$project_dir")"
    entry="$(bsm_helper claude-entry --config "$config" --scope "$scope" --project "$project_dir" --name "$name")" ||
        bsm_die "could not read ${config}"
    if [ "$entry" = null ]; then
        echo "Claude Code: no server named '${name}' in the ${scope} scope (nothing to remove)."
        return 0
    fi
    backup="$(bsm_helper backup --client claude --dir "$backup_dir" --config "$config" --name "$name" \
        --scope "$scope" --project "$project_dir" --reason uninstall)" || bsm_die "could not back up the Claude entry"
    backups+=("$backup")
    bsm_run_client "claude mcp remove $name -s $scope" bsm_claude "$project_dir" mcp remove "$name" -s "$scope"
    bsm_helper claude-check --config "$config" --scope "$scope" --project "$project_dir" --name "$name" --expect null ||
        bsm_die "Claude Code still holds '${name}' in the ${scope} scope"
    echo "Claude Code: removed '${name}' from the ${scope} scope (${config}; entry saved in ${backup})."
}

for client in "${BSM_CLIENTS[@]}"; do
    "uninstall_${client}"
done

if [ "$remove_key" -eq 1 ]; then
    if [ -e "$key_file" ]; then
        rm -f -- "$key_file"
        echo "Deleted the stored API key ${key_file}."
    else
        echo "No stored API key at ${key_file}."
    fi
fi

bsm_print_rollback "${backups[@]+"${backups[@]}"}"
