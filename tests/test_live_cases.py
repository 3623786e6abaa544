"""The live benchmark's workloads: they name real dataset groups (the warm agent's model is
trained without its workload's group, so a group no dataset has would hold nothing out and
the warm arm would start from a model that has seen the load), and those run on our own
sysbench scripts pass what the scripts declare and what the dataset measured."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.knobs import Engine
from benchmarks.live import case as live_case
from benchmarks.live.case import CasePlan
from benchmarks.live.cases import DATASET_GROUPS, WORKLOADS
from lab.mariadb import SYNC_TIMING_ARGS
from scripts.mariadb_dataset.cases import SERVER_OPTIONS
from scripts.mariadb_dataset.catalog_v2 import WORKLOADS as DATASET_WORKLOADS
from trainer.bootstrap import bundled_by_domain
from trainer.sources.datasets import load_dataset


def test_every_live_workload_holds_out_a_group_the_real_datasets_have() -> None:
    groups: set[str] = set()
    for name in bundled_by_domain(Engine.MARIADB)[1]:
        groups |= set(load_dataset(name).workloads["group"])
    missing = {name: group for name, group in DATASET_GROUPS.items() if group not in groups}
    assert not missing, f"live workloads whose group no bundled dataset has: {missing}"


def test_every_live_script_declares_the_options_it_is_given() -> None:
    """A live workload on one of our sysbench scripts runs an existing script, with only the
    options it declares (a misspelt one would fail the load minutes into a live case)."""
    scripts = {name: w for name, w in WORKLOADS.items() if w.test.endswith(".lua")}
    assert "stall_mix" in scripts
    for name, workload in scripts.items():
        text = Path(workload.test).read_text()
        declared = set(re.findall(r"^\s*(\w+)\s*=\s*\{", text, flags=re.MULTILINE))
        given = {
            arg.removeprefix("--").split("=")[0].replace("-", "_") for arg in workload.extra_args
        }
        assert given <= declared, f"{name}: options the script does not declare: {given - declared}"


def test_the_live_stall_mix_is_the_datasets() -> None:
    """The live stall mix runs the dataset's case as measured: its script, options, tables,
    metric and server, so a live run and the dataset's curve describe the same load. The
    dataset's server also times synchronisation waits; a live cold run does so only with
    ``--sync-timing``."""
    live, dataset = WORKLOADS["stall_mix"], DATASET_WORKLOADS["stall_mix_cpu"]
    assert Path(live.test) == Path(dataset.test)
    assert live.extra_args == dataset.extra_args
    assert live.tables == (dataset.tables, dataset.table_size)
    assert (live.metric, live.group) == (dataset.metric, dataset.group_name)
    assert set(live.server_args) <= set(SERVER_OPTIONS[dataset.server])
    assert set(SYNC_TIMING_ARGS + live.server_args) == set(SERVER_OPTIONS[dataset.server])


class _Started(Exception):
    """Raised by the stand-in server: the case asked for a server with these options."""


@pytest.mark.parametrize("sync_timing", [False, True])
def test_sync_timing_starts_the_live_server_with_the_datasets_instruments(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sync_timing: bool
) -> None:
    def start(*, prefix: str, extra_args: tuple[str, ...]) -> None:
        raise _Started(extra_args)

    monkeypatch.setattr(live_case, "running_mariadb", start)
    plan = CasePlan(
        sizes=(1, 2),
        sweep_seconds=1.0,
        passes=1,
        agent_seconds=1.0,
        ab_seconds=1.0,
        work_dir=tmp_path,
    )
    with pytest.raises(_Started) as started:
        live_case.run_case("stall_mix", 64, plan, {}, sync_timing=sync_timing)
    (args,) = started.value.args
    assert (set(SYNC_TIMING_ARGS) <= set(args)) == sync_timing
    assert set(WORKLOADS["stall_mix"].server_args) <= set(args)
