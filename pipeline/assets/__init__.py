"""Dagster assets, one module per layer: raw (fetch and land; never opens DuckDB), core (DuckDB tables), out
(sizing, setups, exports)."""
