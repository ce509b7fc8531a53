"""Every column of every committed table is described, with its unit, in
``system_model.studies.columns`` (the docs' output reference is generated from it)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from system_model.schemes import SCHEMES
from system_model.studies.columns import COLUMNS, describe

RESULTS = Path(__file__).resolve().parents[1] / "sim_results"

TABLES = {"report_<preset>.csv": "report_t3-paper.csv", "peers.csv": "peers.csv",
          "sweep_<hardware>.csv": "sweep_t3-paper.csv", "sensitivity_<preset>.csv": "sensitivity_t3-paper.csv"}


@pytest.mark.parametrize("table", list(TABLES))
def test_every_written_column_is_described(table):
    with (RESULTS / TABLES[table]).open() as f:
        header = next(csv.reader(f))
    axes = tuple(json.loads((RESULTS / "sweep_t3-paper.axes.json").read_text())["axes"]) \
        if table.startswith("sweep") else ()
    missing = [c for c in header if describe(table, c, axes=axes, schemes=SCHEMES,
                                             sets=("headline", "palm_mtnlg")) is None]
    assert not missing, f"{TABLES[table]}: columns without a description in columns.py: {missing}"


def test_no_description_is_of_a_column_nobody_writes():
    for table, name in TABLES.items():
        with (RESULTS / name).open() as f:
            header = set(next(csv.reader(f)))
        stale = [c for c in COLUMNS[table] if c not in header]
        assert not stale, f"columns.py describes {stale} in {table}, which {name} does not have"
