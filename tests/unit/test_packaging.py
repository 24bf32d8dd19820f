"""What a user installing the package sees: the version, ``python -m cuedrecall``, and a missing model's extra."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from cuedrecall import __version__
from cuedrecall.cli import main
from cuedrecall.embed import models
from cuedrecall.errors import SettingsError
from tests.conftest import REPO_ROOT


def test_version_flag_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"cuedrecall {__version__}"


def test_python_dash_m_runs_the_same_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cuedrecall", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == f"cuedrecall {__version__}"


def test_the_package_says_it_is_typed() -> None:
    """py.typed ships inside the package (pyproject's package-data), so type checkers read its hints."""
    import cuedrecall

    assert Path(cuedrecall.__file__).with_name("py.typed").is_file()
    assert "py.typed" in REPO_ROOT.joinpath("pyproject.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize("name, extra", [("multilingual-e5-small", "e5"), ("minilm-l6-int8", "l6")])
def test_a_model_that_is_not_installed_is_refused_at_start_naming_its_extra(
    monkeypatch: pytest.MonkeyPatch, name: str, extra: str
) -> None:
    real = metadata.distribution

    def missing(package: str) -> metadata.Distribution:
        if package == models.MODELS[name].distribution:
            raise metadata.PackageNotFoundError(package)
        return real(package)

    monkeypatch.setattr(models.metadata, "distribution", missing)
    with pytest.raises(SettingsError, match=rf"pip install 'cuedrecall\[{extra}\]'"):
        models.local_embedder(name)
    models.local_embedder("paraphrase-minilm-l3")  # the default is never an extra


def test_every_non_default_model_names_an_extra_the_project_declares() -> None:
    declared = set(metadata.metadata("cuedrecall").get_all("Provides-Extra") or [])
    for model in models.MODELS.values():
        assert (model.extra == "") == (model.name == models.DEFAULT_MODEL)
        if model.extra:
            assert model.extra in declared, (model.name, declared)
