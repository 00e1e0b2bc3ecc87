"""Snapshots: building the per-model JSON and Parquet tables, JSON Schemas, atomic publishing, the CLI's reader."""
