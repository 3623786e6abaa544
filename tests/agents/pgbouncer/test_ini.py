"""Per-database pool sizes in pgbouncer.ini: only ``pool_size`` changes, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.pgbouncer import ini

MAIN = """\
;; pooltune test ini
[databases]
; a comment with pool_size=99
app = host=10.0.0.1 dbname=app min_pool_size=2 pool_size=20
"quoted db" = host=10.0.0.1 dbname=q connect_query='SELECT 1 AS pool_size' pool_mode=session
reports = host=10.0.0.2 dbname=reports
* = host=10.0.0.3
%include extra.ini

[pgbouncer]
default_pool_size = 20
"""
EXTRA = """\
[databases]
late = host=10.0.0.4 dbname=late pool_size=7
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "extra.ini").write_text(EXTRA)
    path = tmp_path / "pgbouncer.ini"
    path.write_text(MAIN)
    return path


def test_own_pool_sizes_follow_includes_and_quotes(config: Path) -> None:
    assert ini.explicit_pool_sizes(config) == {
        "app": 20,
        "quoted db": None,
        "reports": None,
        "*": None,
        "late": 7,
    }


def test_setting_a_size_changes_only_that_option(config: Path) -> None:
    ini.set_pool_sizes(config, {"app": 5, "reports": 12, "quoted db": 3})
    text = config.read_text()
    assert "app = host=10.0.0.1 dbname=app min_pool_size=2 pool_size=5\n" in text
    assert "reports = host=10.0.0.2 dbname=reports pool_size=12\n" in text
    assert "connect_query='SELECT 1 AS pool_size' pool_mode=session pool_size=3\n" in text
    assert "; a comment with pool_size=99\n" in text
    assert ini.explicit_pool_sizes(config)["app"] == 5


def test_removing_a_size_restores_the_line(config: Path) -> None:
    ini.set_pool_sizes(config, {"reports": 12})
    ini.set_pool_sizes(config, {"reports": None})
    assert config.read_text() == MAIN
    ini.set_pool_sizes(config, {"app": None})
    assert "app = host=10.0.0.1 dbname=app min_pool_size=2\n" in config.read_text()


def test_included_files_are_edited_in_place(config: Path) -> None:
    ini.set_pool_sizes(config, {"late": 9})
    assert (config.parent / "extra.ini").read_text().endswith("pool_size=9\n")
    assert config.read_text() == MAIN


def test_a_database_without_its_own_line_changes_nothing(config: Path) -> None:
    with pytest.raises(ini.IniError, match="no \\[databases\\] line for other"):
        ini.set_pool_sizes(config, {"app": 4, "other": 4})
    assert config.read_text() == MAIN


def test_an_unreadable_file_is_an_ini_error(tmp_path: Path) -> None:
    with pytest.raises(ini.IniError, match="cannot read"):
        ini.database_lines(tmp_path / "missing.ini")
