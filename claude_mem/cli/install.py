"""`claude-mem install` / `uninstall`: register with Claude Code, or take it back out."""

from __future__ import annotations

import click

from claude_mem.cli.app import cli, emit_json
from claude_mem.cli.params import dry_run_option, json_option
from claude_mem.hosts import claude_code, codex_cli

_FOLDER = click.Path(exists=True, file_okay=False, resolve_path=True)


def _project_dir_option(command):  # noqa: ANN001, ANN202 - a click decorator
    """`--project-dir DIR` (`--project` is a project's name everywhere else); `--project DIR`, as
    older versions spelt it, still works, hidden."""
    command = click.option("--project", "old_project_dir", type=_FOLDER, hidden=True)(command)
    return click.option("--project-dir", "project_dir", type=_FOLDER, metavar="DIR",
                        help="Write DIR/.claude/settings.json and DIR/.mcp.json instead of the user-wide files.")(command)
_codex_option = click.option(
    "--codex", is_flag=True,
    help="The Codex CLI instead of Claude Code: hooks (trusted) and the MCP server in $CODEX_HOME (~/.codex).")


@cli.command("install")
@_project_dir_option
@_codex_option
@dry_run_option
@json_option
def install_command(project_dir: str | None, old_project_dir: str | None, codex: bool, dry_run: bool, as_json: bool) -> None:
    """Register the hooks and the MCP server with Claude Code (or the Codex CLI)."""
    project = project_dir or old_project_dir
    _no_project_for_codex(project, codex)
    try:
        result = codex_cli.install(dry_run=dry_run) if codex else claude_code.install(project, dry_run=dry_run)
    except claude_code.InstallError as exc:
        raise click.ClickException(str(exc)) from None
    if not dry_run:
        _describe_mcp_server()
    _report(result, as_json)


def _describe_mcp_server() -> None:
    """The first session's `claude-mem mcp` answers Claude Code's probe from this description
    (mcp/shim.py) before any memory service has run; the service writes it again when it starts."""
    from claude_mem import settings
    from claude_mem.mcp.host import write_current_description

    try:
        write_current_description(settings.load(strict=False))
    except OSError as exc:
        click.echo(f"warning: the MCP server's description was not written ({exc}); the memory service writes it", err=True)


@cli.command("uninstall")
@_project_dir_option
@_codex_option
@dry_run_option
@json_option
def uninstall_command(project_dir: str | None, old_project_dir: str | None, codex: bool, dry_run: bool, as_json: bool) -> None:
    """Remove claude-mem's hooks and MCP server from Claude Code's settings, or Codex's (stored memory stays)."""
    project = project_dir or old_project_dir
    _no_project_for_codex(project, codex)
    try:
        result = codex_cli.uninstall(dry_run=dry_run) if codex else claude_code.uninstall(project, dry_run=dry_run)
    except claude_code.InstallError as exc:
        raise click.ClickException(str(exc)) from None
    stopped = None
    if not dry_run:
        from claude_mem import settings
        from claude_mem.service.control import stop_service

        # Nothing of ours keeps running once we are uninstalled (the service would idle out anyway).
        stopped = stop_service(settings.data_dir_from_env())
    _report(result, as_json, service_stopped=stopped)


def _no_project_for_codex(project: str | None, codex: bool) -> None:
    if project and codex:
        raise click.UsageError("--codex writes $CODEX_HOME; it takes no --project-dir")


def _report(result: claude_code.Result, as_json: bool, service_stopped: int | None = None) -> None:
    if as_json:
        emit_json({**result.as_dict(), **({"service_stopped": service_stopped} if service_stopped else {})})
        return
    if service_stopped:
        click.echo(f"stopped the memory service (pid {service_stopped})")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    verb = "would change" if result.dry_run else "changed"
    for f in result.files:
        if not f.changed:
            click.echo(f"{f.path}: nothing to change")
            continue
        click.echo(f"{f.path}: {verb}")
        for change in f.changes:
            click.echo(f"  {change.describe()}")
        if f.backup:
            click.echo(f"  backup: {f.backup}")
    if not result.changed:
        state = "installed" if result.action == "install" else "not installed"
        click.echo(f"claude-mem is already {state} ({result.scope} scope).")
    elif result.dry_run:
        click.echo("Dry run: nothing was written.")
    elif result.action == "install" and result.scope == "codex":
        click.echo("Installed: new Codex sessions will be remembered, in the same memory as Claude Code's.")
    elif result.action == "install":
        hint = " Claude Code asks once before it starts a project's MCP server." if result.scope == "project" else ""
        click.echo(f"Installed: new Claude Code sessions will be remembered.{hint}")
    else:
        click.echo("Uninstalled. Stored memory is kept in the data dir.")
