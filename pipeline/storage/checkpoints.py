"""Load the safetensors headers of each stored Hub revision into ``checkpoint_shards`` / ``checkpoint_summaries``
(migration 005), with the comparison against config arithmetic that sizing reports."""

from __future__ import annotations

import json

import duckdb

from pipeline.ingest.models import checkpoint_facts
from pipeline.sources.huggingface import HubModel
from pipeline.storage.loaders import transaction
from sizing_core import SizingError, parse_config
from sizing_core.parameters import count_parameters


def load_checkpoint_headers(con: duckdb.DuckDBPyConnection, revisions: list[HubModel]) -> dict[str, int]:
    """Insert revisions not yet stored (a revision's headers never change); returns counts for metadata."""
    seen = {(r, s) for r, s in con.execute("SELECT repo, sha FROM checkpoint_summaries").fetchall()}
    added = shards = disagree = 0
    with transaction(con):
        for rev in revisions:
            headers = rev.checkpoint_headers
            if headers is None or (rev.repo, rev.sha) in seen:
                continue
            for shard in headers.shards:
                con.execute("INSERT OR IGNORE INTO checkpoint_shards VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            [rev.repo, rev.sha, shard.file, shard.header_length, shard.data_bytes, shard.file_bytes,
                             shard.tensors, rev.fetched_at])
                shards += 1
            s = headers.summary
            config_total = diff = used = reason = None
            if s is not None:
                try:
                    arch = parse_config(rev.repo, rev.config, rev.hf_quant_config)
                    counts = count_parameters(arch, checkpoint_facts(rev))
                    config_total, diff, used, reason = (counts.config_total, counts.difference_pct, counts.used,
                                                        counts.used_reason)
                    disagree += used == "safetensors"
                except SizingError as exc:
                    reason = f"config does not parse: {exc}"
            con.execute("INSERT OR IGNORE INTO checkpoint_summaries VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                            rev.repo, rev.sha, s and s.files, s and s.tensors, s and s.file_bytes,
                            s and s.parameters, s and s.stored_elements, s and s.mtp_parameters,
                            s and s.vision_parameters, json.dumps(s.bytes_by_dtype) if s else None, config_total,
                            diff, used, reason, headers.error, rev.fetched_at])
            added += 1
    return {"checkpoint_revisions": added, "checkpoint_shards": shards, "checkpoint_disagreements": disagree}
