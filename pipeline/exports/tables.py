"""The published Parquet tables, described once: one class per file, one field per column with its type, unit,
meaning and the SQL that reads it from DuckDB. The export SELECTs, the Parquet field metadata and the column half of
the data dictionary (``docs/exports.md``) are all generated from these classes.

Published names may differ from DuckDB's (the store keeps its names; migrations never rename): a column's ``sql``
says where it comes from. Types: ``int`` -> INTEGER (``col(..., sql_type="BIGINT")`` for big counts), ``float`` ->
DOUBLE, ``str`` -> VARCHAR, ``bool`` -> BOOLEAN, ``datetime`` -> TIMESTAMPTZ (written as UTC), ``date`` -> DATE;
``X | None`` = nullable.

How to add a column (any helper): add the column to DuckDB with your migration, then a field here with
``col("meaning", unit=...)`` (``sql=`` when the published name or type differs). A DuckDB column of a published table
that is neither published nor listed in ``unpublished`` (with the reason) fails ``tests/test_export_contract.py``.
"""

from __future__ import annotations

import builtins
import datetime as dt
import types
import typing
from typing import Any, ClassVar

from pydantic import BaseModel, Field


def col(meaning: str, unit: str | None = None, *, sql: str | None = None, sql_type: str | None = None) -> Any:  # noqa: ANN401
    extra: dict[str, str] = {}
    if unit:
        extra["unit"] = unit
    if sql:
        extra["sql"] = sql
    if sql_type:
        extra["sql_type"] = sql_type
    return Field(description=meaning, json_schema_extra=extra or None)


class PublishedTable(BaseModel):
    file: ClassVar[str]  # published path inside a snapshot
    db_table: ClassVar[str]  # DuckDB table (or FROM clause) the columns are read from
    description: ClassVar[str]
    unpublished: ClassVar[dict[str, str]] = {}  # DuckDB column -> why it is not published
    partition_key: ClassVar[str | None] = None  # a hive partition column: in the path, not inside the files
    #: the published columns the rows are written in order of, so a snapshot's files are the same bytes whenever
    #: their content is (None: the table's own order, which its writer already fixes: the catalog's, the ranks')
    row_order: ClassVar[tuple[str, ...] | None] = None


class ColumnSpec(BaseModel):
    name: str
    sql_type: str
    nullable: bool
    unit: str | None
    meaning: str
    sql: str


_SQL_TYPES = {int: "INTEGER", float: "DOUBLE", str: "VARCHAR", bool: "BOOLEAN", dt.datetime: "TIMESTAMPTZ",
              dt.date: "DATE"}


def columns(table: type[PublishedTable]) -> list[ColumnSpec]:
    hints = typing.get_type_hints(table)
    out = []
    for name, field in table.model_fields.items():
        hint = hints[name]
        args = typing.get_args(hint)
        nullable = isinstance(hint, types.UnionType) and type(None) in args
        base = next(a for a in args if a is not type(None)) if nullable else hint
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        out.append(ColumnSpec(name=name, sql_type=str(extra.get("sql_type") or _SQL_TYPES[base]), nullable=nullable,
                              unit=extra.get("unit"), meaning=field.description or "", sql=str(extra.get("sql") or name)))
    return out


SNAPSHOT_ID = col("snapshot the row was published in (same as manifest.json snapshot_id)", sql="'{snapshot_id}'")


class Models(PublishedTable):
    file = "models.parquet"
    db_table = "models LEFT JOIN hub_dates USING (id)"  # hub_dates: registered by build.py from the Hub state
    description = "Every tracked model (watchlist and discovered) with its latest Hub facts."
    row_order = ("id",)  # a join's output order is the threads' (it moved on a loaded machine)

    id: str = col("model id (models/<id>.json)")
    repo: str = col("Hugging Face repo")
    name: str = col("display name")
    lab: str | None = col("organisation that released the model")
    country: str | None = col("the lab's country")
    released: str | None = col("release date YYYY-MM-DD: the watchlist's, else the UTC day of hub_created_at (as "
                               "the model JSON's released)", sql="coalesce(released, hub_created_day)")
    hub_created_at: dt.datetime | None = col("when the Hub repo was created (createdAt of the model API, UTC; null: "
                                             "not sent, e.g. the bundled recordings)")
    base_model: str | None = col("repo this model derives from (quantized or fine-tuned variants)")
    spec: str | None = col("id of the bundled spec sizing uses instead of a Hub config (null: the Hub config)")
    current_sha: str | None = col("Hub commit sha of the latest ingested revision")
    last_outcome: str | None = col("outcome of the last Hub fetch (ok, unchanged, http_error, ...)")
    pipeline_tag: str | None = col("Hub pipeline tag")
    license: str | None = col("license (model card or license:* tag)")
    gguf_files_json: str | None = col("GGUF files by quant type as JSON text: {quant: {files, bytes, repo}} "
                                      "(decode with json.loads / DuckDB json functions)", sql="gguf_files::VARCHAR")
    derived_json: str | None = col("facts derived from the Hub payload as JSON text: {fact: {value, rule}}",
                                   sql="derived::VARCHAR")
    updated_at: dt.datetime = col("when the row was last written (UTC)")
    snapshot_id: str = SNAPSHOT_ID


class Gpus(PublishedTable):
    file = "gpus.parquet"
    db_table = "gpus"
    description = "The GPU catalog (sizing_core/data/gpus.csv) as sizing used it."

    id: str = col("canonical GPU id")
    name: str = col("display name")
    vendor: str = col("NVIDIA, AMD, Apple, Intel, ...")
    kind: str = col("datacenter, workstation, consumer, apple or unified")
    memory_gb: float = col("memory as the vendor markets it (80 for an H100 80GB): a label, not a byte count (NVIDIA's "
                           "80 GB of HBM3 are 80 GiB; AMD's 192 GB are 10^9-byte GB); memory_gib_visible is the "
                           "byte-exact figure", unit="GB (as marketed)")
    memory_gib_visible: float = col("memory the driver reports (H100 80GB: 81,559 MiB = 79.65 GiB), or the GPU's "
                                    "default share of unified memory; before any engine reservation (compare "
                                    "sizing.engine_usable_gib)", unit="GiB (2^30 bytes)", sql="memory_gib_usable")
    memory_source: str = col("where memory_gib_visible comes from (nvidia-smi capture, vendor spec, share rule)")
    bandwidth_gbs: float | None = col("memory bandwidth", unit="GB/s")
    fp16_tflops_dense: float | None = col("dense FP16/BF16 tensor throughput", unit="TFLOPS")
    fp8_tflops_dense: float | None = col("dense FP8 tensor throughput (null: no FP8)", unit="TFLOPS")
    fp4_tflops_dense: float | None = col("dense FP4 tensor throughput (null: no FP4)", unit="TFLOPS")
    supports_fp8: bool | None = col("FP8 tensor cores")
    supports_nvfp4: bool | None = col("NVFP4 tensor cores")
    supports_mxfp4: bool | None = col("MXFP4 tensor cores")
    gpus_per_node: int = col("GPUs in one machine of the usual shape", unit="GPUs")
    tdp_w: float | None = col("board power", unit="W")
    launch_msrp_usd: float | None = col("launch list price", unit="USD")
    row_hash: str = col("hash of the catalog row (changes drive recomputation of the sizing grid)")
    snapshot_id: str = SNAPSHOT_ID


_OFFER_DOC = {
    "listed_price_per_hour": "price of one instance per hour in the listed currency, after the unit scale "
                             "(cents, 1e-8 units, per month) is applied; rounded to 6 decimals when parsed",
    "gpu_count": "whole GPUs in one instance (null for a fractional offer: see gpu_fraction and gpu_share)",
    "gpu_fraction": "GPU-equivalents a fractional offer rents: slices x gpu_share (one 1g.24gb MIG slice of a 96 GB "
                    "card: 0.25; a pod of 8 such slices: 2.0, still slices); null for whole GPUs",
    "gpu_share": "share of each GPU device rented: 1 for whole cards, slice memory / card memory for a slice "
                 "(MIG 1g.24gb of an RTX PRO 6000: 0.25)",
    "gpu_memory_gb": "DEPRECATED (kept for existing readers): GPU memory per device as the source lists it, in the "
                     "source's own unit (marketed GB, driver GiB, decimal GB or a slice's size); filter on "
                     "gpu_memory_gib or gpu_memory_gb_marketed instead",
    "gpu_memory_gib": "memory the driver shows per GPU device: the GPU catalog's visible memory of gpu_id "
                      "(gpus.memory_gib_visible: 79.647 for an H100 80GB), times gpu_share for a slice; null: "
                      "unmapped GPU",
    "gpu_memory_gb_marketed": "the vendor's memory figure per GPU device (gpus.memory_gb: 80 for an H100 80GB), "
                              "times gpu_share for a slice; null: unmapped GPU",
    "vcpus": "vCPUs of the instance (null: not stated, or not a whole number)",
    "ram_gb": "RAM of the instance (the name is kept for existing readers; the figure is GiB: SkyPilot's MemoryGiB, "
              "MiB / 1024 from DigitalOcean, Vultr and Vast, bytes / 2^30 from Scaleway; Verda's GB taken as listed)",
    "form_factor": "SXM, PCIe, NVL (bridged PCIe pairs: H100/H200 NVL), OAM or Superchip (GB200, GH200): the GPU-map "
                   "row that named the card, the listing's own words, else the GPU catalog's; unknown: the listing "
                   "does not say it of a card sold in several (a plain H100); null: unmapped GPU or a chip that is "
                   "no card",
    "gpu_link": "how the GPUs of one instance talk: NVSwitch, NVLink, NVLink bridge, xGMI, PCIe, or none (one GPU or "
                "a slice), unknown where the form factor is; from the instance-family table "
                "(pipeline/sources/data/interconnect.csv) or the form-factor rule (interconnect_source says which); "
                "null: unmapped GPU",
    "cluster_fabric": "the fabric rented with the instance family to join instances: InfiniBand, RoCE, EFA, NVLink "
                      "domain + RoCE, or none (no cluster fabric listed: separate machines share the public network)",
    "cluster_gbps": "the cluster fabric's bandwidth per instance where the family table states it",
    "interconnect_source": "the family table's source URL, or the rule that gave gpu_link",
    "availability": "availability as the source states it (stock status, capacity, free GPUs), verbatim",
    "availability_status": "available, low or unavailable at fetch time, where the source's API states it (RunPod "
                           "stock status and rentable pod sizes, Lambda capacity regions, DigitalOcean available, "
                           "Akash free GPUs, Vast rentable); null: the source does not say",
    "available_count": "free GPUs where the source counts them (Akash, Vast)",
}
_QUALITY_DOC = {
    "quality_reasons": "why the offer is suspicious: below_band, above_band, spot_reversed, placeholder (empty: none)",
    "quarantined": "has a reason and is not confirmed: never used in setups",
    "eligible": "rentable by the hour at this price now: kept by the dedupe, not quarantined, class on_demand / spot / "
                "marketplace, a mapped GPU, whole GPUs, a positive price, not stale, removed or an unconfirmed "
                "jump (the offers_judged view, sql/020: the one definition every reader uses)",
}


class OffersCurrent(PublishedTable):
    file = "offers_current.parquet"
    db_table = "offers_judged"  # offers_current with its quality verdict and `eligible` (sql/020)
    row_order = ("offer_key",)
    unpublished = {"eligible_when_observed": "the same rule as of the observation's own time (stale and removed do "
                                             "not apply): what price_observations.eligible keeps"}
    description = ("Latest observation of every offer (provider x instance type x region x allocation), with its "
                   "offer-quality verdict (pipeline/quality: dedupe, plausibility band, quarantine) and `eligible`.")

    offer_key: str = col("stable id of the offer: source, instance type, region, zone, allocation")
    source: str = col("price source (one provider may have several, e.g. aws and skypilot-aws)")
    provider: str = col("provider that rents the instance")
    instance_type: str = col("the provider's instance / product name")
    region: str | None = col("region (null when the source lists none)")
    zone: str | None = col("availability zone (null when the source lists none)")
    gpu_name: str = col("GPU name as the source writes it")
    gpu_id: str | None = col("canonical GPU id (gpus.parquet id); null = unmapped name")
    gpu_count: int | None = col(_OFFER_DOC["gpu_count"], unit="GPUs", sql="CASE WHEN NOT fractional THEN gpu_count END")
    gpu_fraction: float | None = col(_OFFER_DOC["gpu_fraction"], unit="GPUs",
                                     sql="CASE WHEN fractional THEN gpu_count END")
    gpu_share: float | None = col(_OFFER_DOC["gpu_share"], unit="ratio")
    fractional: bool = col("the offer rents a share of a GPU (MIG slice, time-sharing); never used for setups")
    gpu_memory_gb: float | None = col(_OFFER_DOC["gpu_memory_gb"], unit="as listed (mixed)")
    gpu_memory_gib: float | None = col(_OFFER_DOC["gpu_memory_gib"], unit="GiB (2^30 bytes)")
    gpu_memory_gb_marketed: float | None = col(_OFFER_DOC["gpu_memory_gb_marketed"], unit="GB (as marketed)")
    form_factor: str | None = col(_OFFER_DOC["form_factor"])
    gpu_link: str | None = col(_OFFER_DOC["gpu_link"])
    cluster_fabric: str | None = col(_OFFER_DOC["cluster_fabric"])
    cluster_gbps: float | None = col(_OFFER_DOC["cluster_gbps"], unit="Gb/s")
    interconnect_source: str | None = col(_OFFER_DOC["interconnect_source"])
    vcpus: int | None = col(_OFFER_DOC["vcpus"], unit="vCPUs", sql="CASE WHEN vcpus = floor(vcpus) THEN vcpus END")
    ram_gb: float | None = col(_OFFER_DOC["ram_gb"], unit="GiB")
    currency: str = col("ISO 4217 currency of the listed_* price columns (kept under this name: `vramlab cheapest` "
                        "reads it)")
    listed_price_per_hour: float = col(_OFFER_DOC["listed_price_per_hour"], unit="currency/instance-hour",
                                       sql="price_per_hour")
    listed_price_per_gpu_hour: float = col("listed_price_per_hour / GPUs (gpu_count, or gpu_fraction for a "
                                           "fractional offer)", unit="currency/GPU-hour", sql="price_per_gpu_hour")
    price_per_hour_usd: float = col("price of one instance per hour in USD (ECB rate of fx_date)",
                                    unit="USD/instance-hour")
    price_per_gpu_hour_usd: float = col("price per GPU-hour in USD (per GPU-equivalent for a fractional offer)",
                                        unit="USD/GPU-hour")
    listed_unit: str = col("how the source priced the offer: gpu-hour (per GPU) or instance-hour (per instance); "
                           "not the unit of the price columns, which are always per hour as named", sql="unit")
    fx_date: str | None = col("date of the ECB rate used for USD (null: listed in USD)")
    allocation: str = col("on_demand, spot, marketplace, marketplace_median, bid_statistics or monthly, as the "
                          "source labels it (allocation_class: how setups treat it)")
    availability: str | None = col(_OFFER_DOC["availability"])
    availability_status: str | None = col(_OFFER_DOC["availability_status"])
    available_count: int | None = col(_OFFER_DOC["available_count"], unit="GPUs")
    availability_observed_at: dt.datetime | None = col(
        "when the availability was observed: the fetch of the offer's latest observation (last_seen); null when "
        "the source states none", sql="CASE WHEN availability_status IS NOT NULL THEN last_seen END")
    first_seen: dt.datetime = col("first observation of the offer (UTC)")
    last_seen: dt.datetime = col("latest observation of the offer (UTC)")
    verified_at: dt.datetime = col("last time the price was actually seen at the source (UTC); a replayed "
                                   "recording keeps its capture time")
    removed: bool = col("absent from its source's latest successful fetch")
    stale: bool = col("verified more than 2 hours before the as-of time")
    previous_price_usd: float | None = col("previous price_per_hour_usd (null: never changed)",
                                           unit="USD/instance-hour")
    jump_unconfirmed: bool = col(">5x change not yet confirmed by a second observation")
    canonical_provider: str | None = col("one provider id per company (oci and oracle -> oracle); null: offer "
                                         "quality not computed")
    via: str | None = col("direct (the provider's own API/page) or aggregator (SkyPilot catalog, marketplace)")
    allocation_class: str | None = col("on_demand, spot, marketplace or monthly: how setups treat the offer")
    duplicate_of: str | None = col("offer_key of the offer that won the dedupe (null: this offer is the one kept)")
    reference_gpu_hour_usd: float | None = col("median of distinct providers' on-demand price for this GPU "
                                               "(gpu_price_reference)", unit="USD/GPU-hour")
    ratio_to_reference: float | None = col("price_per_gpu_hour_usd / reference_gpu_hour_usd", unit="ratio")
    quality_reasons: builtins.list[str] | None = col(_QUALITY_DOC["quality_reasons"], sql="reasons",
                                                     sql_type="VARCHAR[]")
    confirmed_by: str | None = col("second_source or observations: why a band outlier is trusted anyway")
    quarantined: bool | None = col(_QUALITY_DOC["quarantined"] + " (null: offer quality not computed)")
    eligible: bool = col(_QUALITY_DOC["eligible"])
    snapshot_id: str = SNAPSHOT_ID


class GpuPriceReference(PublishedTable):
    file = "gpu_price_reference.parquet"
    db_table = "gpu_price_reference"
    row_order = ("gpu_id",)
    description = "Per GPU, the cross-provider on-demand reference price the offer-quality band is drawn around."

    gpu_id: str = col("canonical GPU id")
    providers: int = col("distinct canonical providers with an on-demand offer", unit="providers")
    offers: int = col("on-demand offers considered", unit="offers")
    median_gpu_hour_usd: float = col("median over providers of each provider's median price (zone copies "
                                     "collapsed)", unit="USD/GPU-hour")
    band_low_usd: float | None = col("lower edge of the plausibility band (null: too few providers to judge)",
                                     unit="USD/GPU-hour")
    band_high_usd: float | None = col("upper edge of the plausibility band (null: too few providers)",
                                      unit="USD/GPU-hour")
    min_gpu_hour_usd: float = col("cheapest on-demand offer", unit="USD/GPU-hour")
    max_gpu_hour_usd: float = col("dearest on-demand offer", unit="USD/GPU-hour")
    computed_at: dt.datetime = col("when the reference was computed (UTC)")
    snapshot_id: str = SNAPSHOT_ID


class PriceObservations(PublishedTable):
    file = "price_observations"
    db_table = "price_observations"
    description = ("Append-only price history: one row per offer per observation hour, in UTC-day partitions "
                   "(hive layout date=YYYY-MM-DD) shared by every snapshot (see manifest.history).")
    partition_key = "date"

    offer_key: str = col("stable id of the offer (offers_current.offer_key)")
    observed_hour: dt.datetime = col("observation time truncated to the hour (UTC); with offer_key the row's key")
    observed_at: dt.datetime = col("when the payload was fetched (UTC)")
    source: str = col("price source")
    provider: str = col("provider")
    instance_type: str = col("the provider's instance / product name")
    region: str | None = col("region")
    zone: str | None = col("availability zone")
    gpu_name: str = col("GPU name as the source writes it")
    gpu_id: str | None = col("canonical GPU id; null = unmapped")
    gpu_count: int | None = col(_OFFER_DOC["gpu_count"], unit="GPUs", sql="CASE WHEN NOT fractional THEN gpu_count END")
    gpu_fraction: float | None = col(_OFFER_DOC["gpu_fraction"], unit="GPUs",
                                     sql="CASE WHEN fractional THEN gpu_count END")
    gpu_share: float | None = col(_OFFER_DOC["gpu_share"] + " (null: observed before the field was recorded)", unit="ratio")
    fractional: bool = col("the offer rents a share of a GPU")
    gpu_memory_gb: float | None = col(_OFFER_DOC["gpu_memory_gb"], unit="as listed (mixed)")
    gpu_memory_gib: float | None = col(_OFFER_DOC["gpu_memory_gib"] + " (also null: observed before the field was recorded)",
                                       unit="GiB (2^30 bytes)")
    gpu_memory_gb_marketed: float | None = col(_OFFER_DOC["gpu_memory_gb_marketed"], unit="GB (as marketed)")
    form_factor: str | None = col(_OFFER_DOC["form_factor"])
    gpu_link: str | None = col(_OFFER_DOC["gpu_link"])
    cluster_fabric: str | None = col(_OFFER_DOC["cluster_fabric"])
    cluster_gbps: float | None = col(_OFFER_DOC["cluster_gbps"], unit="Gb/s")
    interconnect_source: str | None = col(_OFFER_DOC["interconnect_source"])
    vcpus: int | None = col(_OFFER_DOC["vcpus"], unit="vCPUs", sql="CASE WHEN vcpus = floor(vcpus) THEN vcpus END")
    ram_gb: float | None = col(_OFFER_DOC["ram_gb"], unit="GiB")
    currency: str = col("ISO 4217 currency of the listed_* price columns")
    listed_price_per_hour: float = col(_OFFER_DOC["listed_price_per_hour"], unit="currency/instance-hour",
                                       sql="price_per_hour")
    listed_price_per_gpu_hour: float = col("listed_price_per_hour / GPUs (gpu_count, or gpu_fraction)",
                                           unit="currency/GPU-hour", sql="price_per_gpu_hour")
    price_per_hour_usd: float = col("price of one instance per hour in USD", unit="USD/instance-hour")
    price_per_gpu_hour_usd: float = col("price per GPU-hour in USD", unit="USD/GPU-hour")
    listed_unit: str = col("how the source priced the offer: gpu-hour or instance-hour", sql="unit")
    listed_unit_scale: str = col("scale of the listed number before conversion: 1, cents, 1e-8, month/730",
                                 sql="unit_scale")
    fx_rate: float = col("units of the listed currency per USD on fx_date (usd = listed / fx_rate; 1 for USD)",
                         unit="currency/USD")
    fx_date: str | None = col("date of the ECB rate (null: listed in USD)")
    allocation: str = col("on_demand, spot, marketplace, marketplace_median, bid_statistics or monthly; "
                          "reference_on_demand / reference_marketplace: a third party's dated record of a "
                          "provider's cheapest price (history only, never an offer)")
    availability: str | None = col(_OFFER_DOC["availability"])
    availability_status: str | None = col(_OFFER_DOC["availability_status"] + " at observed_at")
    available_count: int | None = col(_OFFER_DOC["available_count"], unit="GPUs")
    quarantined: bool | None = col(_QUALITY_DOC["quarantined"] + "; the verdict when the observation was current "
                                   "(null: observed before quality was recorded in the history)")
    quality_reasons: builtins.list[str] | None = col(_QUALITY_DOC["quality_reasons"] + "; null as quarantined",
                                                     sql_type="VARCHAR[]")
    eligible: bool | None = col(
        "rentable by the hour at this price when observed: the same rule as offers_current.eligible (the "
        "offers_judged view, sql/020) as of observed_at, where stale and removed do not apply (an observation is "
        "fresh and listed when it is made); stamped by the run that loaded it (null: observed before quality was "
        "recorded in the history, or superseded within the run that loaded it)")
    mapping_version: str = col("version of the GPU-name mapping that produced gpu_id")
    raw_sha256: str | None = col("sha256 of the raw payload the row was parsed from (data/raw/...)")
    date: dt.date = col("UTC day of observed_at: the hive partition key, in the path date=YYYY-MM-DD (not inside "
                        "the files; read with hive_partitioning)", sql="(observed_at AT TIME ZONE 'UTC')::DATE")


class Sizing(PublishedTable):
    file = "sizing.parquet"
    db_table = "sizing"
    row_order = ("model_id", "format", "context", "gpu_id", "engine")
    description = ("The sizing grid: model x format x context x GPU x engine. est_gpus is the planner's count on "
                   "every cell (the planner's own rule, computed on columns by the grid; gpus_rule names the cells "
                   "the model JSON shows).")
    unpublished = {"gpu_row_hash": "internal: drives recomputation when a GPU catalog row changes",
                   "sizing_version": "internal: drives recomputation when the sizing code changes (sql/013)"}

    model_id: str = col("model id")
    revision: str = col("Hub commit sha sized, or spec:<hash> for a bundled spec")
    format: str = col("weight format (native = the checkpoint's own)")
    stored_format: str = col("the format native resolves to (e.g. fp8_block -> fp8)")
    context: int = col("tokens of the one request", unit="tokens")
    gpu_id: str = col("canonical GPU id")
    gpu_kind: str = col("datacenter, workstation, consumer, apple or unified")
    engine: str = col("engine id (vllm, sglang, llama.cpp, mlx)")
    runs: bool = col("the engine runs this format on this GPU (natively or with a fallback kernel)")
    native_support: bool = col("native kernels (false: fallback)")
    above_max_context: bool = col("context is above the model's maximum (no count is given)")
    weights_gib: float = col("weights in this format", unit="GiB")
    kv_gib: float = col("KV cache of the request (BF16 cache, no tensor parallelism)", unit="GiB")
    state_gib: float = col("linear-attention/SSM state of the request", unit="GiB")
    single_gpu_gib: float = col("memory one GPU would need: weights + KV + state + the engine's activations",
                                unit="GiB")
    engine_usable_gib: float = col("memory the engine can use on one GPU for weights, cache, state and activations "
                                   "(visible memory x the engine's fraction - its fixed overhead; H100 with vLLM: "
                                   "0.9 x 79.65 - 1 = 70.68); compare gpus.memory_gib_visible",
                                   unit="GiB", sql="s.usable_gib")
    fits_single: bool = col("fits on one GPU")
    json_column: str | None = col("the models/<model_id>.json gpusNeeded column this row is shown in (native, bf16, "
                                  "fp8, q4_k_m; with gpu_id and context 8192); null: not shown in the JSON",
                                  sql="x.json_column")
    est_gpus: int | None = col("fewest GPUs: the exact planner's count (sizing_core.placement.search.fewest_gpus; equal to "
                               "the model JSON's gpusNeeded where gpus_rule = exact_planner); null: see "
                               "est_gpus_reason", unit="GPUs",
                               sql="CASE WHEN x.model_id IS NOT NULL THEN x.exact_gpus ELSE s.est_gpus END")
    gpus_rule: str = col("where est_gpus was taken: exact_planner (the planner run per cell, the cells the model "
                         "JSON shows) or closed_form (the grid, elsewhere); both are the one rule "
                         "(sizing_core.placement.fewest on the planner's stage counts) and give the same count on every cell "
                         "(the value names are kept for existing readers)",
                         sql="CASE WHEN x.model_id IS NOT NULL THEN 'exact_planner' ELSE 'closed_form' END")
    closed_form_gpus: int | None = col("the grid's count for every cell: the planner's rule on columns, equal to "
                                       "est_gpus on every cell (the name is kept for existing readers)",
                                       unit="GPUs",
                                       sql="s.est_gpus")
    est_gpus_reason: str | None = col(
        "why est_gpus is null (null when it is set): engine_cannot_run_format, above_max_context, "
        "no_plan_within_max_gpus (no plan of at most 128 GPUs, or a single layer does not fit), or the exact "
        "planner's own reason", sql="{est_gpus_reason}")
    decode_tokens_per_s: float | None = col("one request's decode speed on the planner's plan (est_gpus at the "
                                            "planner's TP), by the engine model "
                                            "(sizing_core.engines.speed.decode_ms: the engine's share of the "
                                            "bandwidth, per-layer, MoE and all-reduce costs, the compute term); the "
                                            "figure fit gives for the same plan", unit="tokens/s")
    snapshot_id: str = SNAPSHOT_ID


class CheapestSetups(PublishedTable):
    file = "cheapest_setups.parquet"
    db_table = "cheapest_setups"
    description = ("Per model, format and standard load (8K x 1, 32K x 8, 128K x 1 where reached, max context x 1), "
                   "the cheapest distinct deployments with a BF16 KV cache, priced on whole instances, by price and "
                   "by cost per output token; on_demand and spot lists apart (spot: 8K x 1 by price).")

    model_id: str = col("model id")
    list: str = col("on_demand, or spot (spot, marketplace and bid statistics)")
    rank: int = col("1 = cheapest within (model, list, format, context, concurrency, sort)")
    format: str = col("weight format served")
    provider: str = col("provider")
    source: str = col("price source")
    instance_type: str = col("the provider's instance type")
    region: str | None = col("region")
    gpu_id: str = col("canonical GPU id")
    instances: int = col("whole instances rented", unit="instances")
    gpus_per_instance: int = col("GPUs per instance", unit="GPUs")
    gpus: int = col("GPUs rented (instances x gpus_per_instance)", unit="GPUs")
    gpus_needed: int = col("GPUs the plan uses (<= gpus)", unit="GPUs")
    tensor_parallel: int = col("tensor-parallel size", unit="GPUs")
    pipeline_parallel: int = col("pipeline stages", unit="stages")
    price_per_hour_usd: float = col("price of all instances per hour in USD", unit="USD/hour", sql="price_per_hour")
    price_per_month_usd: float = col("price_per_hour_usd x 730 hours", unit="USD/month", sql="price_per_month")
    price_per_gpu_hour_usd: float = col("price per rented GPU-hour in USD", unit="USD/GPU-hour",
                                        sql="price_per_gpu_hour")
    price_per_hour: float = col("DEPRECATED alias of price_per_hour_usd, kept for schema-1 readers and "
                                "`vramlab cheapest`", unit="USD/hour")
    price_per_month: float = col("DEPRECATED alias of price_per_month_usd (schema 1)", unit="USD/month")
    price_per_gpu_hour: float = col("DEPRECATED alias of price_per_gpu_hour_usd (schema 1)", unit="USD/GPU-hour")
    currency_listed: str = col("currency the provider listed the price in (ISO 4217)")
    fx_date: str | None = col("date of the ECB rate used (null: listed in USD)")
    allocation: str = col("allocation class of the offer (offer quality stage): on_demand, spot or marketplace; "
                          "monthly offers never enter setups")
    engine: str = col("engine id of the plan")
    verified_at: dt.datetime = col("last time the offer's price was seen at its source (UTC)")
    computed_at: dt.datetime = col("when the setup was computed (UTC)")
    nodes: int | None = col("machines rented; more than 1 only over a rented cluster interconnect or, flagged, "
                            "llama.cpp RPC", unit="machines")
    deployment: str | None = col("single_machine, cluster (nodes joined by a rented fabric: see interconnect) or "
                                 "llama.cpp-rpc (separately rented machines; flagged)")
    interconnect: str | None = col("the cluster fabric joining the nodes (multi-node setups only)")
    native_support: bool | None = col("the GPU runs the format natively (false: a fallback kernel, see "
                                      "support_note)")
    support_note: str | None = col("how the engine runs the format on this GPU")
    flags: builtins.list[str] | None = col("what a user should know before renting this setup", sql_type="VARCHAR[]")
    fx_stale: bool | None = col("the price was converted with an ECB rate more than 4 days older than the "
                                "snapshot's as-of time")
    availability: str | None = col("available at fetch time (low stock), unavailable at fetch time, or listed, "
                                   "capacity unknown: what the offer's source stated when its price was fetched "
                                   "(null: computed before the field was recorded)")
    decode_tokens_per_s: float | None = col("decode speed of one request on this plan (null: no bandwidth figure)",
                                            unit="tokens/s")
    max_concurrent_requests: int | None = col("requests of the load's context the plan holds at once",
                                              unit="requests")
    aggregate_tokens_per_s: float | None = col("decode speed of max_concurrent_requests together", unit="tokens/s")
    usd_per_million_tokens: float | None = col("price_per_hour_usd / (decode_tokens_per_s x 3600) x 1e6: one "
                                               "request at a time", unit="USD per 1M output tokens")
    usd_per_million_tokens_batched: float | None = col("price_per_hour_usd / (aggregate_tokens_per_s x 3600) x 1e6: "
                                                       "the plan kept full", unit="USD per 1M output tokens")
    decode_tokens_per_s_low: float | None = col("low end of decode_tokens_per_s's range (calibration band)", unit="tokens/s")
    decode_tokens_per_s_high: float | None = col("high end of decode_tokens_per_s's range", unit="tokens/s")
    aggregate_tokens_per_s_low: float | None = col("low end of aggregate_tokens_per_s's range", unit="tokens/s")
    aggregate_tokens_per_s_high: float | None = col("high end of aggregate_tokens_per_s's range", unit="tokens/s")
    usd_per_million_tokens_batched_low: float | None = col("usd_per_million_tokens_batched at the fast end of the "
                                                           "range", unit="USD per 1M output tokens")
    usd_per_million_tokens_batched_high: float | None = col("usd_per_million_tokens_batched at the slow end of the "
                                                            "range", unit="USD per 1M output tokens")
    # the load and the ranking: rows of older snapshots are the 8K x 1 price list (nulls)
    context: int | None = col("tokens per request of the load the setup serves (8,192 for the published question)",
                              unit="tokens")
    concurrency: int | None = col("requests of that context served at once", unit="requests")
    sort: str | None = col("price (cheapest $/h first; rank price with multi-machine setups at 1.25x), per_token "
                           "(lowest usd_per_million_tokens_at_load first, same factor) or floor (the cheapest by "
                           "price meeting the default interactive floor at the load's standard workload; llama.cpp "
                           "RPC chains last in every list)")
    regions: builtins.list[str] | None = col("every region offering this very setup at this price (one row per "
                                             "provider x instance type x price)", sql_type="VARCHAR[]")
    tokens_per_s_per_request: float | None = col("decode speed of each request while `concurrency` requests run "
                                                 "together", unit="tokens/s")
    usd_per_million_tokens_at_load: float | None = col("price_per_hour_usd / (concurrency x tokens_per_s_per_request "
                                                       "x 3600) x 1e6", unit="USD per 1M output tokens")
    snapshot_id: str = SNAPSHOT_ID


#: every published Parquet table, in publishing order
TABLES: tuple[type[PublishedTable], ...] = (Models, Gpus, OffersCurrent, GpuPriceReference, Sizing, CheapestSetups,
                                            PriceObservations)


def select_sql(table: type[PublishedTable], prefix: str = "", **params: str) -> str:
    """The select list that reads ``table`` from DuckDB with published names and types (``{placeholders}`` filled
    from ``params``; plain column names get ``prefix``, e.g. ``s.`` when sizing is joined). The partition key is
    left out (it is the folder)."""
    from pipeline.storage.published import select_list

    return select_list([(f"{prefix}{c.sql}" if c.sql.isidentifier() else c.sql.format(**params), c.sql_type, c.name)
                        for c in columns(table) if c.name != table.partition_key])
