"""The pieces of ``scripts/make_mariadb_dataset.py``: the case catalogs, the measuring, the
stored cases and how a run resumes, the tables and the README of a measured MariaDB dataset.
See docs/datasets.md."""
