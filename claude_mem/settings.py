"""Where claude-mem keeps its data, and how it is configured.

Settings come from `<data dir>/settings.json`, overridden by `CLAUDE_MEM_<KEY>` environment
variables. Only entry points (the hook dispatcher, the CLI, the worker, the MCP server) call
`load()`; everything else receives the resulting `Config`.

This module is on the hook path: standard library only, nothing slow at import.
"""

from __future__ import annotations

import json
import math
import os
import sys

# Hook path: `typing` and `dataclasses` (which pulls in `inspect`) cost ~7 ms of the hook's
# ~25 ms budget, so annotations stay unevaluated and these classes are written out by hand.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

APP = "claude-mem"
ENV_PREFIX = "CLAUDE_MEM_"
DATA_DIR_ENV = "CLAUDE_MEM_DATA_DIR"
PYTHON_ENV = "CLAUDE_MEM_PYTHON"  # the Python the plugin builds its environment with (plugin/claude-mem)


class SettingsError(ValueError):
    """A setting is unknown or has a value that cannot be used."""


class SettingKind:
    """What a setting's value is, and so how `Setting.parse` reads it. Named constants, not an
    Enum: this module is on every hook's path, and an Enum class made it ~4x slower to load
    (70 -> 308 us executing it, same run; the hook waits for it)."""

    STR = "str"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    LIST = "list"          # of strings: JSON, or comma-separated text
    CHOICE = "choice"      # one of the setting's `choices`
    RELPATH = "relpath"    # `off`, or a path relative to a project's root that stays inside it
    PRICES = "prices"      # four prices per million tokens, or none
    ALL = frozenset((STR, INT, FLOAT, BOOL, LIST, CHOICE, RELPATH, PRICES))


class Setting:
    __slots__ = ("key", "kind", "default", "help", "choices", "minimum")

    def __init__(self, key: str, kind: str, default: Any, help: str, *, choices: tuple[str, ...] = (),
                 minimum: float | None = None) -> None:
        self.key = key
        if kind not in SettingKind.ALL:  # a misspelt kind fails at import, not when a value is read
            raise ValueError(f"{key}: {kind!r} is not a setting kind ({', '.join(sorted(SettingKind.ALL))})")
        self.kind = kind
        self.default = default
        self.help = help
        self.choices = choices
        self.minimum = minimum

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.upper()

    def parse(self, raw: Any) -> Any:
        """Turn a value from JSON or the environment into this setting's type, or raise."""
        kind = self.kind
        if kind in (SettingKind.STR, SettingKind.CHOICE):
            if not isinstance(raw, str):
                raise SettingsError(f"{self.key}: expected a string, got {raw!r}")
            if kind == SettingKind.CHOICE and raw not in self.choices:
                raise SettingsError(f"{self.key}: {raw!r} is not one of {', '.join(self.choices)}")
            return raw
        if kind == SettingKind.RELPATH:
            return self._relative_path(raw)
        if kind == SettingKind.BOOL:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise SettingsError(f"{self.key}: expected true or false, got {raw!r}")
        if kind == SettingKind.LIST:
            if isinstance(raw, str):
                return [item.strip() for item in raw.split(",") if item.strip()]
            if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
                return list(raw)
            raise SettingsError(f"{self.key}: expected a list of strings, got {raw!r}")
        if kind == SettingKind.PRICES:
            return self._prices(raw)
        if kind in (SettingKind.INT, SettingKind.FLOAT):
            if isinstance(raw, bool):
                raise SettingsError(f"{self.key}: expected a number, got {raw!r}")
            try:
                if kind == SettingKind.INT and isinstance(raw, float) and not raw.is_integer():
                    raise ValueError(raw)  # int() would silently truncate 2.5 to 2
                value: float = int(raw) if kind == SettingKind.INT else float(raw)
                if not math.isfinite(value):
                    raise ValueError(raw)
            except (TypeError, ValueError, OverflowError):
                wanted = "an integer" if kind == SettingKind.INT else "a number"
                raise SettingsError(f"{self.key}: expected {wanted}, got {raw!r}") from None
            if self.minimum is not None and value < self.minimum:
                raise SettingsError(f"{self.key}: must be at least {self.minimum:g}, got {value!r}")
            return value
        raise AssertionError(kind)

    def _relative_path(self, raw: Any) -> str:
        """`off`, or a file path relative to a project's root that stays inside it."""
        value = raw.strip() if isinstance(raw, str) else None
        parts = (value or "").replace("\\", "/").split("/")
        if value is None or os.path.isabs(value) or value.startswith("~") or ".." in parts or parts[-1] in ("", "."):
            raise SettingsError(f"{self.key}: expected off or a file path relative to the project root, got {raw!r}")
        return "off" if value.lower() == "off" else value

    def _prices(self, raw: Any) -> list[float]:
        """Four non-negative numbers (per million tokens: input, output, cache read, cache write), or none."""
        items = raw.split(",") if isinstance(raw, str) else raw
        try:
            if not isinstance(items, list) or any(isinstance(i, bool) for i in items):
                raise ValueError(raw)
            values = [float(i) for i in items if not (isinstance(i, str) and not i.strip())]
        except (TypeError, ValueError):
            values = [-1.0]
        if values and (len(values) != 4 or not all(math.isfinite(v) and v >= 0 for v in values)):
            raise SettingsError(f"{self.key}: expected four prices per million tokens (input, output, cache read,"
                                f" cache write), e.g. 1,5,0.1,1.25; got {raw!r}")
        return values


# Our own MCP tools are skipped so that recalling memory is not itself remembered.
DEFAULT_SKIP_TOOLS = [
    "TodoWrite",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "mcp__claude-mem__*",
    "mcp__plugin_claude-mem_*",
    "mcp__plugin_memory_claude-mem__*",  # the plugin `memory@claude-mem` (.claude-plugin/)
]

SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in [
        Setting("model", "str", "claude-haiku-4-5", "Model the observer uses."),
        Setting(
            "synthesizer", "choice", "auto",
            "auto: the model, falling back to heuristics when no model can be used; "
            "model: the model only; heuristic: never call a model.",
            choices=("auto", "model", "heuristic"),
        ),
        Setting("cli_path", "str", "", "Claude Code CLI for the observer (default: the one bundled with claude-agent-sdk)."),
        Setting("worker_autostart", "bool", True, "Start background workers by themselves (hooks, retry, doctor --fix)."),
        Setting("worker_idle_s", "float", 300.0, "Seconds a worker waits for new events before it exits.", minimum=0),
        Setting("observer_idle_s", "float", 30.0,
                "Seconds the observer's Claude CLI stays up without work; the next batch resumes the same conversation.",
                minimum=0),
        Setting("observer_daily_tokens", "int", 0,
                "Observer tokens (input + output, as the API reports them) a day may cost, 0 for no limit: past it"
                " synthesizer auto uses the heuristic synthesizer for the rest of the day, model lets events wait for"
                " tomorrow.", minimum=0),
        Setting("observer_context_tokens", "int", 60000,
                "The observer starts a fresh conversation (with a recap of what the session holds) once a request"
                " carries this many tokens: every request re-reads the whole conversation.", minimum=1000),
        Setting("observer_prices", "prices", [],
                "Prices per million observer tokens (input, output, cache read, cache write, e.g. 1,5,0.1,1.25 for"
                " Haiku 4.5 in USD): stats then shows the observer's cost in money too."),
        Setting("fold_subagents", "bool", True,
                "Leave a subagent's own tool calls out of what the observer sees: what the subagent returned (its Task"
                " call) stands for them. The heuristic synthesizer still sees them."),
        Setting("max_workers", "int", 4, "Most workers (and observer CLIs) running at once per data folder; other sessions wait"
                " in the queue.", minimum=1),
        Setting("service_idle_s", "float", 1800.0, "Seconds the memory service stays up without a request.", minimum=0),
        Setting("max_attempts", "int", 3,
                "Failures of an event's own before it is given up: the API rejected it, or the reply would not parse"
                " after a nudge (outages never count). Then synthesizer auto writes heuristic observations, model skips it.",
                minimum=1),
        Setting("observer_timeout_s", "float", 120.0, "Seconds the model may take to answer one message before the try fails.",
                minimum=1),
        Setting("observer_start_give_up_s", "float", 1800.0,
                "Seconds the observer CLI may keep failing to start (killed, exiting, hanging) before the session counts it"
                " as unable to start: synthesizer auto then switches to heuristics, model skips its events.", minimum=0),
        Setting("retry_backoff_s", "float", 5.0,
                "First wait after a model failure: then x2 per failed try of an outage (with jitter), x4 per attempt of an event.",
                minimum=0),
        Setting("retry_backoff_max_s", "float", 180.0,
                "Longest wait between two tries of the model (an outage is probed at least this often).", minimum=0),
        Setting("batch_chars", "int", 12000, "Most characters of events sent to the model in one message.", minimum=500),
        Setting("batch_wait_s", "float", 120.0, "Seconds a batch that is not full waits for its turn to end or more events"
                " before it is sent (each request re-reads the whole observer conversation).", minimum=0),
        Setting("max_field_chars", "int", 16000, "Tool inputs and responses longer than this are cut to head and tail.", minimum=200),
        Setting("skip_tools", "list", DEFAULT_SKIP_TOOLS, "Tools never queued (a trailing * matches a prefix)."),
        Setting("context_chars", "int", 8000, "Most characters the SessionStart digest injects.", minimum=200),
        Setting("compact_context_chars", "int", 2500, "Most characters of the session's own working set that"
                " SessionStart injects after a compaction, before the digest.", minimum=200),
        Setting("push_prompt", "bool", True, "Push the memories that bear on each prompt into Claude's context (UserPromptSubmit)."),
        Setting("push_prompt_chars", "int", 1200, "Most characters one prompt's recall injects.", minimum=200),
        Setting("push_files", "bool", True, "Before Claude reads or edits a file, push what earlier sessions did with it (PreToolUse)."),
        Setting("push_commands", "bool", True, "Before a shell command runs, push its latest failure in an earlier session (PreToolUse)."),
        Setting("remember_chars", "int", 4000, "Most characters of a memory a person or the agent states (`remember`, `edit`, the"
                " viewer, the MCP tool remember); longer text is refused.", minimum=100),
        Setting("ask_chars", "int", 800, "Most characters of an answer from `claude-mem ask` and the MCP tool ask.", minimum=200),
        Setting("push_timeout_ms", "int", 300, "How long the prompt hook waits for the memory service's search before it answers"
                " from keywords alone.", minimum=0),
        Setting("chroma_url", "str", "", "Use a Chroma server (e.g. http://127.0.0.1:8000) instead of the embedded index."),
        Setting("installation_name", "str", "",
                "The name teammates see beside what this installation shares on a Chroma server (default: the host name;"
                " other characters than letters, digits, . _ - become -)."),
        Setting("local_projects", "list", [],
                "Projects never sent to a Chroma server (chroma_url); their memories are searched by keyword only."),
        Setting("embedder", "choice", "auto", "The semantic index's model: minilm (English), multilingual (Chinese,"
                " Japanese and English alike), or auto (multilingual once the store is written in Chinese, Japanese or"
                " Korean; status says why).",
                choices=("auto", "minilm", "multilingual")),
        Setting("memory_file", "relpath", "off",
                "Keep a section of memory in this file at the project's root, between two marker lines, for agents that"
                " read it (CLAUDE.md, AGENTS.md, or a path relative to the root); off: none."),
        Setting("memory_file_lines", "int", 150, "Most lines of the memory file's section.", minimum=20),
        Setting("semantic_index", "bool", True, "Keep the Chroma index for search by meaning (off: keyword search only, no model loaded)."),
        Setting("retention_days", "int", 0, "prune removes memories older than this (0 keeps everything).", minimum=0),
        Setting("hook_busy_ms", "int", 3000, "How long a hook waits for a locked database before spooling.", minimum=0),
    ]
}


def default_data_dir(environ: Mapping[str, str] | None = None) -> str:
    """platformdirs' user data dir for claude-mem, without paying ~19 ms to import it.

    Linux and macOS follow platformdirs' own rules (a test pins the equality); other systems
    ask platformdirs itself (which reads os.environ whatever `environ` says).
    """
    env = os.environ if environ is None else environ
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd", "darwin")):
        # platformdirs takes XDG_DATA_HOME on both, but only an absolute path (a relative or
        # blank one is ignored).
        base = env.get("XDG_DATA_HOME", "")
        if not os.path.isabs(base):
            base = os.path.expanduser("~/Library/Application Support" if sys.platform == "darwin" else "~/.local/share")
        return os.path.join(base, APP)
    import platformdirs

    return platformdirs.user_data_dir(APP, appauthor=False)


class Config:
    """The settings in force: `values` holds them (the one store: `settings set` and tests change
    it), read as attributes. Each setting is declared below with its type, so the type checker
    sees every use (a misspelt setting is an error where it is written); tests/test_settings.py
    holds the declarations to SETTINGS. The declarations make no attributes at run time: a read
    goes to `__getattr__`, which the type checker is not shown."""

    model: str
    synthesizer: Literal["auto", "model", "heuristic"]
    cli_path: str
    worker_autostart: bool
    worker_idle_s: float
    observer_idle_s: float
    observer_daily_tokens: int
    observer_context_tokens: int
    observer_prices: list[float]
    fold_subagents: bool
    max_workers: int
    service_idle_s: float
    max_attempts: int
    observer_timeout_s: float
    observer_start_give_up_s: float
    retry_backoff_s: float
    retry_backoff_max_s: float
    batch_chars: int
    batch_wait_s: float
    max_field_chars: int
    skip_tools: list[str]
    context_chars: int
    compact_context_chars: int
    push_prompt: bool
    push_prompt_chars: int
    push_files: bool
    push_commands: bool
    remember_chars: int
    ask_chars: int
    push_timeout_ms: int
    chroma_url: str
    installation_name: str
    local_projects: list[str]
    embedder: Literal["auto", "minilm", "multilingual"]
    memory_file: str
    memory_file_lines: int
    semantic_index: bool
    retention_days: int
    hook_busy_ms: int

    def __init__(self, data_dir: str, values: dict[str, Any], sources: dict[str, str] | None = None,
                 warnings: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.values = values
        self.sources = sources if sources is not None else {}  # key -> default | file | env
        self.warnings = warnings if warnings is not None else []

    if not TYPE_CHECKING:
        def __getattr__(self, key: str) -> Any:
            try:
                return self.__dict__["values"][key]
            except KeyError:
                raise AttributeError(key) from None

    @property
    def db_path(self) -> str:
        return os.path.join(self.data_dir, "claude-mem.db")

    @property
    def settings_path(self) -> str:
        return os.path.join(self.data_dir, "settings.json")

    @property
    def logs_dir(self) -> str:
        return os.path.join(self.data_dir, "logs")

    @property
    def workers_dir(self) -> str:
        return os.path.join(self.data_dir, "workers")

    @property
    def spool_dir(self) -> str:
        return os.path.join(self.data_dir, "spool")

    def ensure_dirs(self) -> None:
        """Create the data dir (0700) and its sub-folders; memory is private to its owner."""
        # The spool is made up front so that events can still be kept after the data dir itself
        # has become read-only.
        for path in (self.data_dir, self.logs_dir, self.spool_dir):
            if not os.path.isdir(path):
                os.makedirs(path, mode=0o700, exist_ok=True)
                os.chmod(path, 0o700)


def data_dir_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The data dir `environ` (default: this process's environment) names, else the default."""
    env = os.environ if environ is None else environ
    explicit = env.get(DATA_DIR_ENV, "").strip()
    return os.path.abspath(os.path.expanduser(explicit)) if explicit else default_data_dir(env)


def read_settings_file(path: str) -> dict[str, Any]:
    """settings.json's settings; SettingsError, one line naming the file, when it is not a JSON object."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return {}  # most data folders have none: no module to load for it on the hook path
    except OSError:
        pass  # read_json_object says why it cannot be read
    from claude_mem.jsonfile import JSONFileError, read_json_object

    try:
        return read_json_object(path)[0]
    except JSONFileError as exc:
        raise SettingsError(str(exc)) from None


def load(strict: bool = True, environ: Mapping[str, str] | None = None) -> Config:
    """Read settings. strict (the CLI) raises on any problem; hooks pass strict=False and get
    defaults for what is wrong, with a warning each, because a hook must never fail. `environ`
    (default: this process's environment) is read for the data dir too, not only the settings."""
    env = os.environ if environ is None else environ
    data_dir = data_dir_from_env(env)
    config = Config(data_dir=data_dir, values={k: s.default for k, s in SETTINGS.items()})
    config.sources = {k: "default" for k in SETTINGS}

    def problem(message: str) -> None:
        if strict:
            raise SettingsError(message)
        config.warnings.append(message)

    try:
        from_file = read_settings_file(config.settings_path)
    except SettingsError as exc:
        problem(str(exc))
        from_file = {}
    for key, raw in from_file.items():
        setting = SETTINGS.get(key)
        if setting is None:
            problem(f"unknown setting {key!r} in {config.settings_path} (known: {', '.join(SETTINGS)})")
            continue
        try:
            config.values[key] = setting.parse(raw)
            config.sources[key] = "file"
        except SettingsError as exc:
            problem(f"{exc} (in {config.settings_path})")

    known_env = {s.env: s for s in SETTINGS.values()}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name in (DATA_DIR_ENV, PYTHON_ENV):
            continue
        setting = known_env.get(name)
        if setting is None:
            problem(f"unknown environment variable {name}")
            continue
        try:
            config.values[setting.key] = setting.parse(raw)
            config.sources[setting.key] = "env"
        except SettingsError as exc:
            problem(f"{exc} (from {name})")
    return config


def write_setting(config: Config, key: str, raw: str) -> Any:
    """Validate and store one setting in settings.json; returns the parsed value."""
    setting = SETTINGS.get(key)
    if setting is None:
        raise SettingsError(f"unknown setting {key!r} (known: {', '.join(SETTINGS)})")
    value = setting.parse(_coerce_cli_value(setting, raw))
    current = read_settings_file(config.settings_path)
    current[key] = value
    from claude_mem.jsonfile import write_json_atomic

    config.ensure_dirs()
    write_json_atomic(config.settings_path, current, indent=2, sort_keys=True)
    return value


def _coerce_cli_value(setting: Setting, raw: str) -> Any:
    # A value typed on the command line is text; lists may be given as JSON or comma-separated.
    if setting.kind == SettingKind.LIST and raw.strip().startswith("["):
        try:
            return json.loads(raw)
        except ValueError:
            raise SettingsError(f"{setting.key}: {raw!r} is not a JSON list") from None
    return raw
