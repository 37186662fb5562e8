#!/usr/bin/env bash
# Put a Codex or Claude Code MCP registration back exactly as a backup of register/uninstall recorded it.
# See --help. The current state is itself backed up first, so a restore can be undone too.
set -euo pipefail

BSM_PROG="restore-mcp-from-backup.sh"
# shellcheck source=scripts/_common.sh
. "$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/_common.sh"

usage() {
    cat <<'USAGE'
Usage: scripts/restore-mcp-from-backup.sh [--backup-dir DIR] BACKUP_FILE [BACKUP_FILE...]

Restores what a backup written by register-mcp.sh or uninstall-mcp.sh recorded:
  Codex:        the whole config.toml, byte for byte, as it was (Codex rewrites the
                file on every change, so only a whole-file copy is exact); when there
                was no config.toml, it is removed. Later edits to that file are undone.
  Claude Code:  the one server entry in the scope it was taken from (removed when it
                did not exist), via `claude mcp remove` / `claude mcp add-json`.
Before changing anything it saves the current state as a new backup and prints the
command that undoes the restore. Run with the same CODEX_HOME / CLAUDE_CONFIG_DIR as
when the backup was taken.

Options:
  --backup-dir DIR   where the pre-restore backups go (default: the folder of each
                     BACKUP_FILE)
  -h, --help         show this help

Exit status: 0 restored, 1 a step failed, 2 bad usage.
USAGE
}

backup_dir=""
files=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --backup-dir)
            bsm_require_option_value "$1" "$#"
            backup_dir="$2"
            shift 2
            ;;
        --backup-dir=*)
            backup_dir="${1#*=}"
            shift
            ;;
        --)
            shift
            files+=("$@")
            break
            ;;
        -*) bsm_usage_error "unknown option: $1" ;;
        *)
            files+=("$1")
            shift
            ;;
    esac
done
[ "${#files[@]}" -gt 0 ] || bsm_usage_error "give the backup file to restore (register-mcp.sh printed its path)"
for file in "${files[@]}"; do
    [ -f "$file" ] || bsm_usage_error "no such backup file: $file"
done
bsm_pick_python "$BSM_REPO_DEFAULT"

undo=()

restore_one() {
    local file="$1" line client="" name="" scope="" project_dir="" config_path="" entry_present=""
    local info
    info="$(bsm_helper backup-info "$file")" || bsm_die "cannot read backup ${file}"
    while IFS= read -r line; do
        case "$line" in
            client=*) client="${line#client=}" ;;
            name=*) name="${line#name=}" ;;
            scope=*) scope="${line#scope=}" ;;
            project_dir=*) project_dir="${line#project_dir=}" ;;
            config_path=*) config_path="${line#config_path=}" ;;
            entry_present=*) entry_present="${line#entry_present=}" ;;
        esac
    done <<<"$info"
    local dir="${backup_dir:-$(dirname -- "$file")}"
    dir="$(bsm_abspath "$dir")"
    "restore_${client}"
}

restore_codex() {
    bsm_require_cli codex
    local current pre
    current="$(bsm_codex_config)"
    [ "$current" = "$config_path" ] ||
        bsm_die "the backup is of ${config_path} but Codex now uses ${current}; set CODEX_HOME=$(dirname -- "$config_path")"
    pre="$(bsm_helper backup --client codex --dir "$dir" --config "$config_path" --name "$name" --reason pre-restore)" ||
        bsm_die "could not back up ${config_path}"
    undo+=("$pre")
    bsm_helper restore-codex-file "$file" || bsm_die "could not write ${config_path}"
    local has=no
    if [ -d "$(bsm_codex_home)" ] && bsm_codex_has "$name"; then has=yes; fi
    [ "$has" = "$entry_present" ] ||
        bsm_die "after the restore Codex $([ "$has" = yes ] && echo lists || echo does not list) '${name}', unlike the backup"
    if [ "$entry_present" = yes ]; then
        echo "Codex: restored ${config_path} as it was (with its '${name}' entry)."
    else
        echo "Codex: restored ${config_path} as it was (without '${name}')."
    fi
}

restore_claude() {
    bsm_require_cli claude
    local current pre entry wanted
    [ -d "$project_dir" ] || bsm_die "the project directory of this backup no longer exists: ${project_dir}"
    current="$(bsm_claude_config "$scope" "$project_dir")"
    [ "$current" = "$config_path" ] ||
        bsm_die "the backup is of ${config_path} but Claude Code now uses ${current}; set CLAUDE_CONFIG_DIR=$(dirname -- "$config_path")"
    pre="$(bsm_helper backup --client claude --dir "$dir" --config "$config_path" --name "$name" \
        --scope "$scope" --project "$project_dir" --reason pre-restore)" || bsm_die "could not back up the Claude entry"
    undo+=("$pre")
    entry="$(bsm_helper claude-entry --config "$config_path" --scope "$scope" --project "$project_dir" --name "$name")" ||
        bsm_die "could not read ${config_path}"
    wanted="$(bsm_helper backup-entry "$file")"
    if [ "$entry" != null ]; then
        bsm_run_client "claude mcp remove $name -s $scope" bsm_claude "$project_dir" mcp remove "$name" -s "$scope"
    fi
    if [ "$wanted" != null ]; then
        bsm_run_client "claude mcp add-json $name" bsm_claude "$project_dir" mcp add-json "$name" "$wanted" -s "$scope"
    fi
    bsm_helper claude-check --config "$config_path" --scope "$scope" --project "$project_dir" --name "$name" \
        --expect "$wanted" || bsm_die "Claude Code did not take the entry back exactly"
    if [ "$wanted" != null ]; then
        echo "Claude Code: restored '${name}' in the ${scope} scope (${config_path})."
    else
        echo "Claude Code: removed '${name}' from the ${scope} scope, as in the backup (${config_path})."
    fi
}

for file in "${files[@]}"; do
    restore_one "$file"
done
bsm_print_rollback "${undo[@]+"${undo[@]}"}"
