"""Settings: CUEDRECALL_* (or CPERSONA_*) variables read once; a malformed value stops startup naming the variable
and what it takes; the two names of one setting set to different values stop it naming both."""

from __future__ import annotations

from dataclasses import fields

import pytest

from cuedrecall.config import Settings, default_db_path, variables
from cuedrecall.errors import SettingsError
from tests.conftest import REPO_ROOT


def test_defaults_from_an_empty_environment_are_the_declared_defaults() -> None:
    settings = Settings.from_env({})
    for f in fields(Settings):
        if f.name == "db_path":
            continue
        assert getattr(settings, f.name) == f.default, f.name
    assert settings.db_path == default_db_path()
    assert settings.max_content_length == 16000
    assert settings.max_profile_length == 2000
    assert settings.max_metadata_length == 8000
    assert settings.auth_token == ""
    assert settings.allow_unauthenticated_http is False
    assert (settings.http_host, settings.http_port) == ("127.0.0.1", 8402)


def test_every_setting_is_read_from_its_prefixed_upper_case_variable() -> None:
    settings = Settings.from_env(
        {
            "CPERSONA_DB_PATH": "/tmp/x.db",
            "CPERSONA_EMBEDDING_MODE": "HASH",
            "CPERSONA_MAX_CONTENT_LENGTH": "123",
            "CPERSONA_RRF_THRESHOLD_FACTOR": "0.25",
            "CPERSONA_FTS_ENABLED": "off",
            "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "true",
            "CPERSONA_AUTH_TOKEN": "tok",
        }
    )
    assert settings.db_path == "/tmp/x.db"
    assert settings.embedding_mode == "hash"
    assert settings.max_content_length == 123
    assert settings.rrf_threshold_factor == 0.25
    assert settings.fts_enabled is False
    assert settings.allow_unauthenticated_http is True
    assert settings.auth_token == "tok"


def test_variables_without_the_prefix_or_empty_are_ignored() -> None:
    settings = Settings.from_env({"MAX_CONTENT_LENGTH": "5", "CPERSONA_MAX_PROFILE_LENGTH": ""})
    assert settings.max_content_length == 16000
    assert settings.max_profile_length == 2000


@pytest.mark.parametrize(
    ("variable", "value", "accepted"),
    [
        # integers: not a number, a fraction, below the minimum, above the maximum
        ("CPERSONA_MAX_CONTENT_LENGTH", "lots", "an integer"),
        ("CPERSONA_MAX_CONTENT_LENGTH", "1.5", "an integer"),
        ("CPERSONA_MAX_CONTENT_LENGTH", "0", ">= 1"),
        ("CPERSONA_HTTP_PORT", "70000", "between 1 and 65535"),
        # floats
        ("CPERSONA_EMBEDDING_TIMEOUT_SECS", "fast", "a number"),
        ("CPERSONA_RRF_THRESHOLD_FACTOR", "1.5", "between 0 and 1"),
        ("CPERSONA_VECTOR_MIN_SIMILARITY", "-2", "between -1 and 1"),
        # booleans
        ("CPERSONA_FTS_ENABLED", "maybe", "true, false"),
        ("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", "2", "true, false"),
        # choices
        ("CPERSONA_EMBEDDING_MODE", "gpt", "local, http, hash, none"),
        (
            "CPERSONA_EMBEDDING_MODEL",
            "text-embedding-3-small",
            "minilm-l6-int8, paraphrase-minilm-l3, multilingual-e5-small",
        ),
        ("CPERSONA_RECALL_MODE", "sum", "rrf, rsf"),
        ("CPERSONA_RECALL_PRECISION", "loose", "strict, balanced, lenient"),
        ("CPERSONA_PRIOR_AGE_ANCHOR", "then", "newest, now"),
    ],
)
def test_a_malformed_value_raises_settings_error_naming_the_variable_and_the_accepted_values(
    variable: str, value: str, accepted: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: value})
    message = str(caught.value)
    assert variable in message
    assert accepted in message
    assert repr(value) in message


def test_every_typed_setting_refuses_garbage() -> None:
    """No setting silently falls back to its default on an unreadable value."""
    for f in fields(Settings):
        if isinstance(f.default, str) and f.name not in (
            "embedding_mode",
            "embedding_model",
            "recall_mode",
            "recall_precision",
            "prior_age_anchor",
        ):
            continue  # free text: db_path, urls, token, host
        variable = "CPERSONA_" + f.name.upper()
        with pytest.raises(SettingsError, match=variable):
            Settings.from_env({variable: "not-a-valid-value"})


def test_keyword_overrides_win_over_the_environment() -> None:
    environ = {"CPERSONA_EMBEDDING_MODE": "local", "CPERSONA_MAX_CONTENT_LENGTH": "100", "CPERSONA_DB_PATH": "/a.db"}
    settings = Settings.from_env(environ, embedding_mode="hash", max_content_length=7, db_path="/b.db")
    assert settings.embedding_mode == "hash"
    assert settings.max_content_length == 7
    assert settings.db_path == "/b.db"


def test_settings_are_read_from_os_environ_when_no_mapping_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CPERSONA_RECALL_PRECISION", "strict")
    assert Settings.from_env().recall_precision == "strict"
    monkeypatch.setenv("CPERSONA_RECALL_PRECISION", "nope")
    with pytest.raises(SettingsError, match="CPERSONA_RECALL_PRECISION"):
        Settings.from_env()


def test_describe_lists_each_setting_under_our_name_first_then_cpersonas() -> None:
    rows = Settings.describe()
    names = [name for name, _, _ in rows]
    assert len(names) == len(set(names)) == 2 * len(fields(Settings))
    for f, ours, theirs in zip(fields(Settings), rows[0::2], rows[1::2]):
        assert ours == ("CUEDRECALL_" + f.name.upper(), f.default, f.metadata["doc"])
        assert theirs[:2] == ("CPERSONA_" + f.name.upper(), f.default) and ours[0] in theirs[2]
        assert variables(f.name) == (ours[0], theirs[0])


# -- our names and CPersona's ---------------------------------------------------------------------

_CHOICES = {
    "embedding_mode": ("hash", "none"),
    "recall_mode": ("rsf", "rrf"),
    "prior_age_anchor": ("now", "newest"),
    "recall_precision": ("strict", "lenient"),
    "embedding_model": ("multilingual-e5-small", "minilm-l6-int8"),
    "recall_gate": ("gate-v0", "gate-v1"),
    "oauth_principal": ("subject", "client"),
    "tool_list": ("compact", "full"),
}


def _two_values(name: str, default: object) -> tuple[str, str, object]:
    """Two different valid raw values for a setting (neither its default) and what the first reads as."""
    if name in _CHOICES:
        first, second = _CHOICES[name]
        return first, second, first
    if name in _UNSET_BY_DEFAULT:
        return _UNSET_BY_DEFAULT[name]
    if isinstance(default, bool):
        return ("false", "true", False) if default else ("true", "false", True)
    if isinstance(default, int):
        return str(default + 2), str(default + 1), default + 2
    if isinstance(default, float):
        return str(default / 4 or 0.25), str(default / 2 or 0.5), default / 4 or 0.25
    return "first-value", "second-value", "first-value"


# settings whose default is None (unset): two valid values each
_UNSET_BY_DEFAULT = {"reconstruct_forced_count": ("3", "4", 3), "reconstruct_forced_budget": ("900", "1000", 900)}

# a value that is refused alone comes with what it needs: block building off needs block retrieval off, a larger
# default count a larger maximum
_NEEDS = {
    "block_build_enabled": {"block_retrieval_enabled": "false"},
    "reconstruct_default_count": {"reconstruct_max_count": "20"},
}


def _alone(prefix: str, name: str, raw: str) -> dict[str, str]:
    """The environment that sets one setting (and what its value needs) under one prefix."""
    return {
        prefix + name.upper(): raw,
        **{prefix + other.upper(): value for other, value in _NEEDS.get(name, {}).items()},
    }


@pytest.mark.parametrize("prefix", ["CUEDRECALL_", "CPERSONA_"])
def test_every_setting_is_read_from_either_name(prefix: str) -> None:
    for f in fields(Settings):
        raw, _, value = _two_values(f.name, f.default)
        assert getattr(Settings.from_env(_alone(prefix, f.name, raw)), f.name) == value, f.name


def test_both_names_with_the_same_value_are_fine() -> None:
    for f in fields(Settings):
        raw, _, value = _two_values(f.name, f.default)
        environ = {**_alone("CUEDRECALL_", f.name, raw), **_alone("CPERSONA_", f.name, raw)}
        assert getattr(Settings.from_env(environ), f.name) == value, f.name
    # the same value written two ways is the same value
    assert Settings.from_env({"CUEDRECALL_FTS_ENABLED": "off", "CPERSONA_FTS_ENABLED": "FALSE"}).fts_enabled is False
    assert (
        Settings.from_env({"CUEDRECALL_EMBEDDING_MODE": "hash", "CPERSONA_EMBEDDING_MODE": "HASH"}).embedding_mode
        == "hash"
    )


def test_both_names_with_different_values_stop_startup_naming_both() -> None:
    for f in fields(Settings):
        first, second, _ = _two_values(f.name, f.default)
        ours, theirs = "CUEDRECALL_" + f.name.upper(), "CPERSONA_" + f.name.upper()
        with pytest.raises(SettingsError) as caught:
            Settings.from_env({ours: first, theirs: second})
        message = str(caught.value)
        assert ours in message and theirs in message, f.name
        assert first not in message and second not in message  # a token is never echoed


def test_an_empty_variable_counts_as_unset_beside_the_other_name() -> None:
    settings = Settings.from_env({"CUEDRECALL_MAX_CONTENT_LENGTH": "", "CPERSONA_MAX_CONTENT_LENGTH": "77"})
    assert settings.max_content_length == 77
    settings = Settings.from_env({"CUEDRECALL_AUTH_TOKEN": "tok", "CPERSONA_AUTH_TOKEN": ""})
    assert settings.auth_token == "tok"


def test_a_malformed_value_under_our_name_is_named_so() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CUEDRECALL_HTTP_PORT": "port"})
    assert "CUEDRECALL_HTTP_PORT" in str(caught.value) and "CPERSONA_" not in str(caught.value)
    with pytest.raises(SettingsError, match="CPERSONA_HTTP_PORT"):  # the other name is checked too
        Settings.from_env({"CUEDRECALL_HTTP_PORT": "8000", "CPERSONA_HTTP_PORT": "port"})


def test_keyword_overrides_win_over_both_names() -> None:
    environ = {"CUEDRECALL_MAX_CONTENT_LENGTH": "100", "CPERSONA_MAX_CONTENT_LENGTH": "200"}
    assert Settings.from_env(environ, max_content_length=7).max_content_length == 7


def test_our_names_are_read_from_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CPERSONA_RECALL_PRECISION", raising=False)
    monkeypatch.setenv("CUEDRECALL_RECALL_PRECISION", "lenient")
    assert Settings.from_env().recall_precision == "lenient"
    monkeypatch.setenv("CPERSONA_RECALL_PRECISION", "strict")
    with pytest.raises(SettingsError, match="CUEDRECALL_RECALL_PRECISION and CPERSONA_RECALL_PRECISION"):
        Settings.from_env()


def test_blocks_are_built_and_searched_by_default_and_searching_unbuilt_blocks_stops_startup() -> None:
    settings = Settings.from_env({})
    assert settings.block_build_enabled is True and settings.block_retrieval_enabled is True
    with pytest.raises(SettingsError, match="BLOCK_RETRIEVAL_ENABLED"):
        Settings.from_env({"CPERSONA_BLOCK_BUILD_ENABLED": "false"})
    off = Settings.from_env({"CUEDRECALL_BLOCK_BUILD_ENABLED": "false", "CUEDRECALL_BLOCK_RETRIEVAL_ENABLED": "no"})
    assert off.block_build_enabled is False and off.block_retrieval_enabled is False
    assert Settings.from_env({"CUEDRECALL_BLOCK_RETRIEVAL_ENABLED": "false"}).block_build_enabled is True


def test_the_readme_lists_every_setting_under_its_cuedrecall_name() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    missing = [
        name for name, _, _ in Settings.describe() if name.startswith("CUEDRECALL_") and f"| `{name}` |" not in readme
    ]
    assert not missing, f"README's settings table lacks {missing}"


@pytest.mark.parametrize(
    "environ",
    [
        {"CUEDRECALL_RECONSTRUCT_DEFAULT_COUNT": "11"},
        {"CUEDRECALL_RECONSTRUCT_FORCED_COUNT": "11"},
        {"CUEDRECALL_RECONSTRUCT_DEFAULT_BUDGET": "30000"},
        {"CUEDRECALL_RECONSTRUCT_FORCED_BUDGET": "30000"},
        {"CUEDRECALL_RECONSTRUCT_DEFAULT_BUDGET": "100"},
    ],
)
def test_a_reconstruct_count_or_budget_that_cannot_be_honoured_stops_startup_naming_it(environ: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match=next(iter(environ))):
        Settings.from_env(environ)


def test_a_cpersona_api_model_name_starts_in_a_mode_that_is_not_local_and_is_refused_in_local() -> None:
    assert (
        Settings.from_env(
            {"CPERSONA_EMBEDDING_MODE": "http", "CPERSONA_EMBEDDING_MODEL": "text-embedding-3-small"}
        ).embedding_model
        == "text-embedding-3-small"
    )
    with pytest.raises(SettingsError, match="CPERSONA_EMBEDDING_MODEL"):
        Settings.from_env({"CPERSONA_EMBEDDING_MODEL": "text-embedding-3-small"})
