"""Settings: defaults, settings.json, CLAUDE_MEM_* overrides, strict and lenient errors, the data dir."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import platformdirs
import pytest

from claude_mem import settings
from claude_mem.settings import SETTINGS, SettingsError


def write_file(data_dir: Path, data: object) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def only(data_dir: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """An environment holding `env` and the data dir alone: what load(environ=...) is given."""
    return {"CLAUDE_MEM_DATA_DIR": str(data_dir), **(env or {})}


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_defaults_without_a_settings_file(data_dir: Path) -> None:
    config = settings.load(strict=True, environ=only(data_dir))
    assert config.data_dir == str(data_dir)
    assert config.values == {key: s.default for key, s in SETTINGS.items()}
    assert set(config.sources.values()) == {"default"}
    assert config.warnings == []
    assert config.db_path == str(data_dir / "claude-mem.db")
    assert config.settings_path == str(data_dir / "settings.json")
    # the documented defaults
    assert config.worker_autostart is True
    assert config.hook_busy_ms >= 1000
    for tool in ("TodoWrite", "ListMcpResourcesTool", "mcp__claude-mem__*"):
        assert tool in config.skip_tools


def test_an_empty_settings_file_means_defaults(data_dir: Path) -> None:
    write_file(data_dir, "  \n")
    assert settings.load(strict=True, environ=only(data_dir)).values == {key: s.default for key, s in SETTINGS.items()}


def test_values_from_settings_json(data_dir: Path) -> None:
    write_file(data_dir, {"model": "claude-sonnet-4-5", "max_attempts": 5, "worker_autostart": False,
                          "skip_tools": ["Bash", "mcp__x__*"], "worker_idle_s": 12.5, "synthesizer": "heuristic"})
    config = settings.load(strict=True, environ=only(data_dir))
    assert config.model == "claude-sonnet-4-5"
    assert config.max_attempts == 5
    assert config.worker_autostart is False
    assert config.skip_tools == ["Bash", "mcp__x__*"]
    assert config.worker_idle_s == 12.5
    assert config.synthesizer == "heuristic"
    assert config.sources["model"] == "file"
    assert config.sources["context_chars"] == "default"


def test_environment_wins_over_the_file(data_dir: Path) -> None:
    write_file(data_dir, {"model": "from-file", "max_attempts": 5, "worker_autostart": True, "skip_tools": ["A"]})
    env = {"CLAUDE_MEM_MODEL": "from-env", "CLAUDE_MEM_MAX_ATTEMPTS": "7", "CLAUDE_MEM_WORKER_AUTOSTART": "off",
           "CLAUDE_MEM_SKIP_TOOLS": "Read, Grep ,,mcp__y__*", "OTHER_VARIABLE": "ignored"}
    config = settings.load(strict=True, environ=only(data_dir, env))
    assert config.model == "from-env"
    assert config.max_attempts == 7
    assert config.worker_autostart is False
    assert config.skip_tools == ["Read", "Grep", "mcp__y__*"]
    assert config.sources["model"] == "env"
    assert SETTINGS["max_attempts"].env == "CLAUDE_MEM_MAX_ATTEMPTS"


def test_the_process_environment_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_CHARS", "1234")
    assert settings.load().context_chars == 1234


def test_data_dir_from_the_environment_is_not_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", "~/mem")
    config = settings.load(strict=True)  # CLAUDE_MEM_DATA_DIR is not "unknown"
    assert config.data_dir == str(tmp_path / "home" / "mem")
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", "  ")
    assert settings.data_dir_from_env() == settings.default_data_dir()


def test_the_data_dir_comes_from_the_environment_given(data_dir: Path, tmp_path: Path) -> None:
    # The process's own CLAUDE_MEM_DATA_DIR (the fixture's) must not win over the one passed in,
    # nor its settings.json be read.
    write_file(data_dir, {"model": "of-the-process"})
    other = tmp_path / "other"
    write_file(other, {"model": "of-the-given-environment"})
    config = settings.load(strict=True, environ=only(other))
    assert config.data_dir == str(other)
    assert config.model == "of-the-given-environment"
    home = tmp_path / "home"
    # Without CLAUDE_MEM_DATA_DIR in it, the default is the one its XDG_DATA_HOME says.
    assert settings.load(strict=True, environ={"XDG_DATA_HOME": str(home)}).data_dir == str(home / "claude-mem")
    assert settings.data_dir_from_env({"CLAUDE_MEM_DATA_DIR": "  ", "XDG_DATA_HOME": str(home)}) == str(home / "claude-mem")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"modle": "x"}, ["unknown setting 'modle'", "settings.json"]),
        ({"max_attempts": "many"}, ["max_attempts", "'many'", "integer"]),
        ({"max_attempts": 0}, ["max_attempts", "at least 1"]),
        ({"max_attempts": 2.5}, ["max_attempts", "2.5"]),
        ({"worker_idle_s": "nan"}, ["worker_idle_s", "nan"]),
        ({"synthesizer": "magic"}, ["synthesizer", "'magic'", "auto, model, heuristic"]),
        ({"worker_autostart": "maybe"}, ["worker_autostart", "true or false"]),
        ({"skip_tools": "Bash"}, []),  # a comma-separated string is a valid list
        ({"skip_tools": [1, 2]}, ["skip_tools", "list of strings"]),
        ({"model": 3}, ["model", "string"]),
        ({"max_field_chars": True}, ["max_field_chars", "number"]),
        ("{not json", ["settings.json", "not valid JSON"]),
        ("[1, 2]", ["settings.json", "JSON object"]),
    ],
)
def test_bad_settings_file_strict_and_lenient(data_dir: Path, content: object, expected: list[str]) -> None:
    write_file(data_dir, content)
    if not expected:
        settings.load(strict=True, environ=only(data_dir))
        return
    with pytest.raises(SettingsError) as info:
        settings.load(strict=True, environ=only(data_dir))
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message
    # hooks: a warning each, defaults for what is wrong, never a failure
    config = settings.load(strict=False, environ=only(data_dir))
    assert len(config.warnings) == 1
    assert all(part in config.warnings[0] for part in expected)
    assert config.values == {key: s.default for key, s in SETTINGS.items()}


def test_lenient_mode_keeps_the_good_values(data_dir: Path) -> None:
    write_file(data_dir, {"model": "good", "bogus": 1, "max_attempts": -1, "context_chars": 999})
    env = {"CLAUDE_MEM_NOPE": "1", "CLAUDE_MEM_BATCH_CHARS": "10", "CLAUDE_MEM_RETENTION_DAYS": "30"}
    config = settings.load(strict=False, environ=only(data_dir, env))
    assert config.model == "good"
    assert config.context_chars == 999
    assert config.retention_days == 30
    assert config.max_attempts == SETTINGS["max_attempts"].default
    assert config.batch_chars == SETTINGS["batch_chars"].default
    assert len(config.warnings) == 4
    joined = "\n".join(config.warnings)
    for part in ("bogus", "max_attempts", "CLAUDE_MEM_NOPE", "CLAUDE_MEM_BATCH_CHARS"):
        assert part in joined


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("CLAUDE_MEM_BOGUS", "1", "unknown environment variable CLAUDE_MEM_BOGUS"),
        ("CLAUDE_MEM_MAX_ATTEMPTS", "three", "CLAUDE_MEM_MAX_ATTEMPTS"),
        ("CLAUDE_MEM_WORKER_IDLE_S", "inf", "worker_idle_s"),
        ("CLAUDE_MEM_HOOK_BUSY_MS", "-5", "at least 0"),
    ],
)
def test_bad_environment_strict_and_lenient(data_dir: Path, name: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError, match=expected):
        settings.load(strict=True, environ=only(data_dir, {name: value}))
    config = settings.load(strict=False, environ=only(data_dir, {name: value}))
    assert len(config.warnings) == 1 and expected in config.warnings[0]


@pytest.mark.parametrize("xdg", [None, "/custom/xdg/data", "", "   ", "relative/dir"])
def test_default_data_dir_matches_platformdirs(xdg: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    expected = platformdirs.user_data_dir("claude-mem", appauthor=False)
    assert settings.default_data_dir() == expected
    if xdg is None:
        assert expected == str(tmp_path / "home" / ".local" / "share" / "claude-mem")
    monkeypatch.delenv("CLAUDE_MEM_DATA_DIR")
    assert settings.load(strict=True).data_dir == expected


def test_ensure_dirs_makes_private_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = os.umask(0o022)
    try:
        target = tmp_path / "deep" / "data"
        monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(target))
        config = settings.load()
        config.ensure_dirs()
    finally:
        os.umask(old)
    for path in (target, target / "logs", target / "spool"):
        assert path.is_dir()
        assert mode(path) == 0o700, oct(mode(path))


def test_write_setting_validates_and_keeps_other_keys(data_dir: Path) -> None:
    config = settings.load()
    assert not data_dir.exists()
    assert settings.write_setting(config, "max_attempts", "4") == 4
    assert mode(data_dir) == 0o700
    assert mode(data_dir / "settings.json") == 0o600
    assert settings.write_setting(config, "skip_tools", '["A", "B*"]') == ["A", "B*"]
    assert settings.write_setting(config, "skip_tools", "A, C") == ["A", "C"]
    assert settings.write_setting(config, "worker_autostart", "no") is False
    saved = json.loads((data_dir / "settings.json").read_text())
    assert saved == {"max_attempts": 4, "skip_tools": ["A", "C"], "worker_autostart": False}

    before = (data_dir / "settings.json").read_text()
    for key, raw, part in [("nope", "1", "unknown setting 'nope'"), ("max_attempts", "0", "at least 1"),
                           ("synthesizer", "gpt", "is not one of"), ("skip_tools", "[1", "not a JSON list"),
                           ("context_chars", "lots", "integer")]:
        with pytest.raises(SettingsError, match=part):
            settings.write_setting(config, key, raw)
    assert (data_dir / "settings.json").read_text() == before
    reloaded = settings.load(strict=True, environ=only(data_dir))
    assert reloaded.max_attempts == 4 and reloaded.worker_autostart is False
    assert not [p for p in data_dir.iterdir() if p.name.endswith(".tmp")]


def test_a_misspelt_setting_kind_fails_where_it_is_written() -> None:
    with pytest.raises(ValueError, match="retries: 'integer' is not a setting kind"):
        settings.Setting("retries", "integer", 3, "How often.")
    assert settings.Setting("retries", "int", 3, "How often.").parse("4") == 4


def test_config_declares_every_setting_with_its_type() -> None:
    """The type checker sees a setting through Config's declaration: one per setting, of the type
    its kind parses to (a choice: exactly its choices), and none that is not a setting."""
    kinds = {"str": "str", "relpath": "str", "int": "int", "float": "float", "bool": "bool", "list": "list[str]",
             "prices": "list[float]"}
    declared = dict(settings.Config.__annotations__)
    assert sorted(declared) == sorted(SETTINGS)
    for key, setting in SETTINGS.items():
        expected = (f"Literal[{', '.join(map(repr, setting.choices))}]"
                    if setting.kind == "choice" else kinds[setting.kind])
        assert declared[key] == expected, key
        assert isinstance(setting.parse(setting.default), type(setting.default))


def test_a_setting_reads_the_values_it_was_given_and_follows_them() -> None:
    config = settings.Config("/data", {key: s.default for key, s in SETTINGS.items()})
    assert config.batch_chars == SETTINGS["batch_chars"].default
    config.values["batch_chars"] = 900  # `settings set` and tests change the one store
    assert config.batch_chars == 900
    with pytest.raises(AttributeError):
        config.not_a_setting  # type: ignore[attr-defined]  # noqa: B018
