"""`dragnet servers`: the query servers found here, why others are missing, and how to register them."""

from __future__ import annotations

import click

from dragnet.servers import registration as reg
from dragnet.errors import DragnetError, UsageError
from dragnet.servers.available import discover
from dragnet.cli.options import print_json, server_option


@click.command("servers")
@click.option("--env", "mode", flag_value="env", help="Print only the `export COUCHDB_QUERY_SERVER_...` lines.")
@click.option("--ini", "mode", flag_value="ini", help="Print only the local.ini fragment.")
@click.option("--json", "mode", flag_value="json", help="Print everything as one JSON object.")
@click.option("--docker", is_flag=True, help="Registration for the Docker image (its in-image paths).")
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              help="Extra servers from an ini or JSON file (name, command, language, dialect, process, "
                   "version_command; docs/your-server.md).")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=reg.DEFAULT_OS_PROCESS_TIMEOUT_MS,
              show_default=True, help="[couchdb] os_process_timeout written to the ini fragment; with "
                                      "--check, how long each answer may take [default there: 5000, CouchDB's].")
@click.option("--build", "build", is_flag=False, flag_value="all", default=None, metavar="[NAMES]",
              help="First build the servers that need it (chakra, couchpy-pypy, bun, or the comma-separated NAMES) "
                   "and say why any cannot be.")
@click.option("--check", "check", metavar="NAME", default=None,
              help="Run CouchDB's query-server protocol cases against server NAME; pass or fail per case.")
@click.option("--case", "cases", multiple=True, metavar="CASE", help="With --check: only this case (repeatable).")
@click.option("--functions", "functions_dir", type=click.Path(file_okay=False), default=None,
              help="With --check: a folder of <role>.<ext> functions in the server's own language.")
@click.option("--views", "views_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Say which servers have which views: every view folder under DIR (e.g. views/) per server.")
@server_option
def servers_cmd(mode: str | None, docker: bool, config: str | None, timeout_ms: int, build: str | None,
                check: str | None, cases: tuple, functions_dir: str | None, views_dir: str | None,
                server_opts: tuple) -> None:
    """List query servers and print how to register them with CouchDB 3.5; --check NAME checks one."""
    from dragnet.servers import available, user

    available.install(server_opts, config)
    if (cases or functions_dir) and not check:
        raise UsageError("--case and --functions go with --check NAME")
    if check:   # --timeout-ms, when given, is how long an answer may take; else CouchDB's default, 5 s
        given = click.get_current_context().get_parameter_source("timeout_ms") == click.core.ParameterSource.COMMANDLINE
        return _check(check, cases, functions_dir, mode == "json", timeout_ms / 1000 if given else None)
    if views_dir:
        return _views(views_dir, mode == "json")
    if build:
        from dragnet.servers import compiling as server_build

        names = server_build.STEPS if build == "all" else tuple(n.strip() for n in build.split(",") if n.strip())
        unknown = [n for n in names if n not in server_build.BUILDERS]
        if unknown or not names:
            raise UsageError(f"--build {build}: expected some of {', '.join(server_build.STEPS)}")
        # progress on stderr, so --env/--ini/--json output stays clean
        for done in server_build.build(names, on_step=lambda name: click.echo(f"building {name} ...", err=True)):
            click.echo(f"  {done.name}: {'built ' if done.ok else 'not built: '}{done.detail}", err=True)
    if docker:
        specs, skipped = list(reg.DOCKER_SPECS), []
    else:
        specs, skipped = discover()
    registered, unregistered = reg.plan(specs)
    environment = reg.environment_for(registered)
    ini = reg.ini_for(os_process_timeout_ms=timeout_ms)
    if mode == "env":
        click.echo(reg.shell_exports(environment), nl=False)
        return
    if mode == "ini":
        click.echo(ini, nl=False)
        return
    if mode == "json":
        print_json({
            "servers": [{"name": s.name, "language": s.language, "dialect": s.dialect, "source": s.source,
                         "command": list(s.argv), "env": dict(s.env), "version": s.version or None} for s in specs],
            "skipped": [{"name": s.name, "reason": s.reason} for s in skipped],
            "environment": environment,
            "not_registered": [{"name": s.name, "reason": s.reason} for s in unregistered],
            "ini": ini,
        })
        return
    width = max([len(s.name) for s in [*specs, *skipped]] + [4])
    click.echo("available:")
    for s in specs:
        extra = " ".join(f"{k}={v}" for k, v in s.env)
        known = s.version or (user.probe_version(s) if s.version_command else "")   # a user-given server's
        version = f"  ({known})" if known else ""
        click.echo(f"  {s.name:<{width}}  {s.language:<18} {s.dialect:<6}  {(extra + ' ') if extra else ''}"
                   f"{' '.join(s.argv)}{version}")
    if skipped:
        click.echo("not available:")
        for s in skipped:
            click.echo(f"  {s.name:<{width}}  {s.reason}")
    click.echo("\nregister with CouchDB 3.5 (environment of the CouchDB process):")
    click.echo(reg.shell_exports(environment), nl=False)
    for s in unregistered:
        click.echo(f"# {s.name}: {s.reason}")
    click.echo("\nand in local.ini (or etc/local.d/dragnet.ini):")
    click.echo(ini, nl=False)


def _check(name: str, cases: tuple, functions_dir: str | None, as_json: bool, timeout_s: float | None) -> None:
    from dragnet.servers import conformance

    def show(o) -> None:
        mark = {"pass": "pass", "fail": "FAIL", "skip": "skip"}[o.status]
        click.echo(f"  {mark}  {o.case:<26} {o.title}" + (f" ({o.got})" if o.status == "skip" else ""))
        if o.status == "fail":
            click.echo(f"        step {o.step}: sent     {o.sent}")
            click.echo(f"                expected {o.expected}")
            click.echo(f"                got      {o.got}")

    if not as_json:
        click.echo(f"checking {name} against CouchDB 3.5's query-server protocol:")
    report = conformance.check_available(name, functions_dir=functions_dir, cases=cases or None,
                                         timeout=timeout_s or conformance.DEFAULT_TIMEOUT_S,
                                         progress=None if as_json else show)
    summary = report.as_dict()
    if as_json:
        print_json(summary)
    else:
        click.echo(f"{name}: {summary['passed']} passed, {summary['failed']} failed, {summary['skipped']} skipped")
    if report.failed:
        raise DragnetError(f"{name} failed {len(report.failed)} of {len(report.outcomes)} cases: "
                           + ", ".join(o.case for o in report.failed))


def _views(views_dir: str, as_json: bool) -> None:
    from dragnet.index.views import coverage

    specs, _ = discover()
    rows = coverage(specs, views_dir)
    if as_json:
        print_json([{"view": v, "server": s, "file": f, "has": has} for v, s, f, has in rows])
        return
    width = max(len(s) for _, s, _, _ in rows)
    view = None
    for v, s, f, has in rows:
        if v != view:
            click.echo(f"{v}:")
            view = v
        click.echo(f"  {s:<{width}}  {f if has else f'no {f}: skipped'}")
