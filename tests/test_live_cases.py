"""The live benchmark's workloads name real dataset groups: the warm agent's model is trained
without its workload's group, so a group no dataset has would hold nothing out and the warm
arm would start from a model that has seen the load."""

from __future__ import annotations

from agents.knobs import Engine
from benchmarks.live.cases import DATASET_GROUPS
from trainer.bootstrap import bundled_by_domain
from trainer.sources.datasets import load_dataset


def test_every_live_workload_holds_out_a_group_the_real_datasets_have() -> None:
    groups: set[str] = set()
    for name in bundled_by_domain(Engine.MARIADB)[1]:
        groups |= set(load_dataset(name).workloads["group"])
    missing = {name: group for name, group in DATASET_GROUPS.items() if group not in groups}
    assert not missing, f"live workloads whose group no bundled dataset has: {missing}"
