"""onsale.kernel.settings: one declaration per setting gives its variable, its parsing,
its range check, its row of the docs; and the unknown names are reported."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from onsale.environment import DOCS, SECTIONS, render, report_unknown
from onsale.kernel.settings import (
    ConfigError,
    Section,
    load,
    read,
    setting,
    table,
    unknown_names,
    variable_names,
)

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Knobs(Section):
    ENV_PREFIX: ClassVar[str] = "T_"

    size: int = setting(4, "How many.", lo=1, hi=9)
    wait: float = setting(0.5, "How long.", positive=True, hi=10, unit="s")
    share: float = setting(0.0, "How much.", lo=0, hi=1)
    on: bool = setting(False, "Whether.")
    name: str | None = setting(None, "Who.", env="T_WHO", aliases=("T_OLD_WHO",))
    mode: str = setting("a", "Which.", choices=("a", "b"))
    plain: int = 7  # not a setting: no variable

    def check(self) -> None:
        if self.size > 5 and self.on:
            raise ConfigError("T_SIZE must be at most 5 when T_ON is set")


def test_variables_are_derived_from_the_declarations() -> None:
    assert [name for name, _f, _s in Knobs.variables()] == [
        "T_SIZE", "T_WAIT", "T_SHARE", "T_ON", "T_WHO", "T_MODE"]
    assert variable_names([Knobs]) == {"T_SIZE", "T_WAIT", "T_SHARE", "T_ON", "T_WHO",
                                       "T_OLD_WHO", "T_MODE"}


def test_values_are_parsed_by_type_and_empty_counts_as_unset() -> None:
    assert read(Knobs, {}) == {}
    assert read(Knobs, {"T_SIZE": "", "T_PLAIN": "3"}) == {}
    got = load(Knobs, {"T_SIZE": "5", "T_WAIT": "10", "T_SHARE": "0", "T_ON": "Yes",
                       "T_WHO": "ann", "T_MODE": "b"})
    assert got == Knobs(size=5, wait=10.0, share=0.0, on=True, name="ann", mode="b")
    assert load(Knobs, {"T_OLD_WHO": "bob"}).name == "bob"
    assert load(Knobs, {"T_OLD_WHO": "bob", "T_WHO": "ann"}).name == "ann"


@pytest.mark.parametrize(("env", "message"), [
    ({"T_SIZE": "x"}, "T_SIZE must be an integer, got 'x'"),
    ({"T_SIZE": "0"}, "T_SIZE must be between 1 and 9, got 0"),
    ({"T_SIZE": "10"}, "T_SIZE must be between 1 and 9, got 10"),
    ({"T_WAIT": "0"}, "T_WAIT must be a positive number at most 10 seconds, got '0'"),
    ({"T_WAIT": "nan"}, "T_WAIT must be a positive number at most 10 seconds, got 'nan'"),
    ({"T_WAIT": "inf"}, "T_WAIT must be a positive number at most 10 seconds, got 'inf'"),
    ({"T_WAIT": "10.5"}, "T_WAIT must be a positive number at most 10 seconds"),
    ({"T_SHARE": "-0.1"}, "T_SHARE must be a number between 0 and 1, got '-0.1'"),
    ({"T_SHARE": "soon"}, "T_SHARE must be a number between 0 and 1, got 'soon'"),
    ({"T_ON": "maybe"}, "T_ON must be true or false, got 'maybe'"),
    ({"T_MODE": "c"}, "T_MODE must be one of a, b"),
    ({"T_SIZE": "6", "T_ON": "1"}, "T_SIZE must be at most 5 when T_ON is set"),
])
def test_a_bad_value_names_its_variable_and_its_range(env: dict[str, str],
                                                      message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(Knobs, env)
    assert message in str(info.value)


def test_each_sections_check_runs_once_in_a_combined_settings_object() -> None:
    calls: list[str] = []

    @dataclass(frozen=True)
    class A(Section):
        a: int = setting(1, "A.", lo=0, hi=9)

        def check(self) -> None:
            calls.append("A")

    @dataclass(frozen=True)
    class B(Section):
        b: int = setting(2, "B.", lo=0, hi=9)

        def check(self) -> None:
            calls.append("B")

    @dataclass(frozen=True)
    class Both(A, B):
        pass

    both = load(Both, {"ONSALE_A": "3", "ONSALE_B": "4"})
    assert (both.a, both.b) == (3, 4)
    assert sorted(calls) == ["A", "B"]


def test_unknown_names_are_reported_with_the_closest_known_one() -> None:
    known = {"ONSALE_HOLD_TTL_SECONDS", "ONSALE_SWEEP_BATCH"}
    env = {"ONSALE_HOLD_TTL": "60", "ONSALE_SWEEP_BATCH": "5", "ONSALE_ZZZ": "1",
           "PATH": "/bin", "onsale_hold_ttl_seconds": "1"}
    assert unknown_names(env, known) == [
        "ONSALE_HOLD_TTL is not a setting onsale reads (did you mean "
        "ONSALE_HOLD_TTL_SECONDS?); it is ignored",
        "ONSALE_ZZZ is not a setting onsale reads; it is ignored"]
    assert unknown_names({"ONSALE_PSP_X": "1", "ONSALE_Y": "1"}, set(),
                         prefixes=("ONSALE_PSP_",)) == [
        "ONSALE_PSP_X is not a setting onsale reads; it is ignored"]


def test_start_up_reports_a_typo_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    lines = report_unknown({"ONSALE_SEATMAP_TICK": "5", "ONSALE_SEATMAP_TICK_MS": "5",
                            "ONSALE_ROLE": "core", "ONSALE_DATA_DIR": "/tmp",
                            "ONSALE_PSP_API_KEY": "sk_old_name_0123456789"}, "onsale serve")
    assert lines == ["ONSALE_SEATMAP_TICK is not a setting onsale reads (did you mean "
                     "ONSALE_SEATMAP_TICK_MS?); it is ignored"]
    assert capsys.readouterr().err == f"onsale serve: warning: {lines[0]}\n"


def test_a_table_row_is_the_declaration() -> None:
    assert table(Knobs).splitlines() == [
        "| Variable | Default | Range / format | What it does |",
        "|---|---|---|---|",
        "| `T_SIZE` | `4` | integer 1–9 | How many. |",
        "| `T_WAIT` | `0.5` | seconds, > 0, at most 10 | How long. |",
        "| `T_SHARE` | `0` | a number, 0–1 | How much. |",
        "| `T_ON` | `false` | `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` | Whether. |",
        "| `T_WHO` | unset | text | Who. |",
        "| `T_MODE` | `a` | one of `a`, `b` | Which. |",
    ]


def test_every_variable_is_declared_by_one_section_only() -> None:
    seen: dict[str, str] = {}
    for cls in SECTIONS:
        for name, _f, _spec in cls.variables():
            if _f.name not in inspect.get_annotations(cls):
                continue  # inherited
            assert name not in seen, f"{name} in {seen.get(name)} and {cls.__name__}"
            seen[name] = cls.__name__
    assert len(seen) > 100


@pytest.mark.parametrize("doc", DOCS)
def test_the_settings_tables_in_the_docs_are_generated_and_fresh(doc: str) -> None:
    text = (ROOT / doc).read_text()
    assert render(text) == text, (
        f"{doc} is stale: run python -m onsale.environment --write")


def test_every_section_has_its_table_in_the_docs() -> None:
    text = "".join((ROOT / doc).read_text() for doc in DOCS)
    for cls in SECTIONS:
        assert text.count(f"<!-- settings: {cls.__name__} -->") == 1, cls.__name__
