"""The published JSON shapes, described once: the per-model JSON (every key of seed 004 with its type and meaning,
plus our additions under new keys), ``index.json`` and the snapshot manifest.

These pydantic models are the contract: the JSON Schema files of a snapshot (``schemas/*.schema.json``) and the
JSON half of the data dictionary (``docs/exports.md``) are generated from them. Every field carries its meaning
(``description``) and, where it has one, its unit (``unit``); see ``d()``.

How to add a key (any helper): add the field to the class below (or, for ``cheapestSetups``/``spotSetups`` items,
to ``pipeline.compute.setups.Setup`` and a line to ``SETUP_DOCS``) with ``d("meaning", unit="...")``; fill it in
``model_json.py``; run ``python -m pipeline.exports.dictionary --write`` to refresh ``docs/exports.md``.
``tests/test_export_contract.py`` fails while a published key has no description.

Rules of the contract:
- every key is always present (``required`` lists every property; absent values are ``null`` where typed so);
- objects are closed (``additionalProperties: false``) unless the class says ``extra="allow"`` with a typed value
  (``weightsGiB`` gains a key per new weight format; ``provenance`` and ``derived`` are open by design);
- numbers are written as JavaScript writes them (``106``, not ``106.0``); integer fields are JSON integers.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from pipeline.compute.setups import Setup
from sizing_core.finetune import FineTuneMemory
from sizing_core.launch import Launch
from sizing_core.parameters import ParameterCounts
from sizing_core.schema import CamelModel

SCHEMA_VERSION = "3"

#: seed 004's gpusNeeded table: GPUs and format columns (the rows and keys every model file has)
SEED_GPUS = ("rtx-4090", "rtx-5090", "rtx-pro-6000", "mac-m5-max-128", "strix-halo", "dgx-spark", "h100", "h200",
             "b200")
COLUMNS = ("native", "bf16", "fp8", "q4_k_m")


def d(meaning: str, unit: str | None = None, *, fmt: str | None = None, **kw: Any) -> Any:  # noqa: ANN401
    """A field's meaning and unit, as the data dictionary and the JSON Schema show them; ``fmt``: the JSON Schema
    ``format`` of a string (``date-time`` for ISO 8601 instants, ``date`` for YYYY-MM-DD days)."""
    extra = ({"unit": unit} if unit else {}) | ({"format": fmt} if fmt else {})
    return Field(description=meaning, json_schema_extra=extra or None, **kw)


class _PublishedRecord(CamelModel):
    model_config = ConfigDict(extra="forbid")


def _published(name: str, record: type, docs: dict[str, tuple[str, str | None]],
               doc: str | None = None) -> type[BaseModel]:
    """The published (closed, camelCase) pydantic model of a result type another layer owns as a plain dataclass
    (sizing_core's ``Record``s, compute's ``Setup``): the same fields, types and defaults, with the meanings and
    units given here, else those the field declares (``sizing_core.record.described``)."""
    hints = typing.get_type_hints(record)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        meaning, unit = docs.get(f.name) or (f.metadata.get("description"), f.metadata.get("unit"))
        extra = ({"unit": unit} if unit else {}) | ({"format": FORMATS[f.name]} if f.name in FORMATS else {}) or None
        if f.default_factory is not dataclasses.MISSING:
            info = Field(default_factory=f.default_factory, description=meaning, json_schema_extra=extra)
        else:
            info = Field(... if f.default is dataclasses.MISSING else f.default, description=meaning,
                         json_schema_extra=extra)
        fields[f.name] = (hints[f.name], info)
    return create_model(name, __base__=_PublishedRecord, __module__=__name__, __doc__=doc, **fields)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Lab(_Strict):
    name: str = d("the organisation that released the model")
    country: str = d("the lab's country")


class KVRow(_Strict):
    context: int = d("tokens in the request", unit="tokens")
    bf16: float = d("KV cache of one request at this context with a BF16 cache", unit="GiB")
    fp8: float = d("the same with an FP8 cache", unit="GiB")


class PlanSummary(_Strict):
    tensorParallel: int = d("tensor-parallel size", unit="GPUs")
    pipelineParallel: int = d("pipeline stages (llama.cpp: layer-split devices)", unit="stages")
    nodes: int = d("machines the plan spans", unit="machines")
    engine: str = d("engine of the plan (display name)")
    format: str = d("weight format actually used for this column on this GPU (8-bit: fp8, int8 or q8_0; "
                    "4-bit: awq_int4 or q4_k_m)")
    nativeSupport: bool = d("the engine runs the format with native kernels (false: a fallback kernel)")


class ByFormat(_Strict):
    native: int | None = d("fewest GPUs for the checkpoint's own format; null = no deployment", unit="GPUs")
    bf16: int | None = d("fewest GPUs with BF16 weights; null = no deployment", unit="GPUs")
    fp8: int | None = d("fewest GPUs with 8-bit weights (FP8 with vLLM, INT8 without FP8, Q8_0 with llama.cpp); "
                        "null = no deployment", unit="GPUs")
    q4_k_m: int | None = d("fewest GPUs with 4-bit weights (AWQ with vLLM, Q4_K_M with llama.cpp); null = no "
                           "deployment", unit="GPUs")


class Plans(_Strict):
    native: PlanSummary | None = d("the plan behind byFormat.native (null = no deployment)")
    bf16: PlanSummary | None = d("the plan behind byFormat.bf16")
    fp8: PlanSummary | None = d("the plan behind byFormat.fp8")
    q4_k_m: PlanSummary | None = d("the plan behind byFormat.q4_k_m")


class GpuNeeded(_Strict):
    gpu: str = d("canonical GPU id (gpus.parquet id)")
    name: str = d("GPU display name")
    memoryGB: int = d("marketed memory, or the GPU's share of unified memory (Apple, Strix Halo, DGX Spark); "
                      "as seed 004 writes it", unit="GB")
    engine: str = d("engine of the scenario on this GPU: vLLM on data-centre GPUs, llama.cpp elsewhere")
    byFormat: ByFormat = d("fewest GPUs per seed format column, from the exact planner (sizing_core.placement.search)")
    plans: Plans = d("addition: the parallelism plan behind each byFormat cell")


class GpusNeeded(_Strict):
    scenario: str = d("the request the counts are for")
    gpus: list[GpuNeeded] = d("one row per seed GPU, in seed order", min_length=len(SEED_GPUS))


class WeightsGiB(BaseModel):
    """Weights per format; the four seed keys are always present, every other weight format may follow."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, float | None]  # one key per further weight format (fp16, int8, q8_0, ... nvfp4)

    native: float | None = d("weights in the checkpoint's own format (the safetensors size when known; null when "
                             "the checkpoint's quantization scheme is unknown)", unit="GiB")
    bf16: float = d("weights in BF16", unit="GiB")
    fp8: float = d("weights in FP8 (modules a checkpoint keeps in BF16 stay BF16)", unit="GiB")
    q4_k_m: float = d("weights as GGUF Q4_K_M (its per-tensor type mix)", unit="GiB")


#: meanings of Setup's fields (Setup lives in pipeline/compute/setups.py; add a line here with each new field)
SETUP_DOCS: dict[str, tuple[str, str | None]] = {
    "provider": ("provider that rents the instance", None),
    "source": ("price source the offer came from (one provider may have several)", None),
    "instance_type": ("the provider's instance / product name", None),
    "region": ("region (null when the source lists none)", None),
    "gpu": ("canonical GPU id", None),
    "gpu_name": ("GPU display name", None),
    "instances": ("whole instances to rent", "instances"),
    "gpus_per_instance": ("GPUs in one instance of this type", "GPUs"),
    "gpus": ("GPUs rented (instances x gpusPerInstance)", "GPUs"),
    "gpus_needed": ("GPUs the plan uses (<= gpus: a provider that sells 8-GPU nodes charges for 8)", "GPUs"),
    "tensor_parallel": ("tensor-parallel size of the plan", "GPUs"),
    "pipeline_parallel": ("pipeline stages of the plan", "stages"),
    "price_per_hour": ("price of all instances per hour, converted to USD", "USD/hour"),
    "price_per_month": ("price_per_hour x 730 hours", "USD/month"),
    "price_per_gpu_hour": ("price per rented GPU per hour", "USD/GPU-hour"),
    "currency_listed": ("currency the provider listed the price in (ISO 4217)", None),
    "fx_date": ("date of the ECB rate used to convert to USD (null: listed in USD)", None),
    "allocation": ("on_demand, or spot / marketplace / marketplace_median / bid_statistics", None),
    "format": ("weight format served", None),
    "engine": ("engine id of the plan (vllm, sglang, llama.cpp, mlx)", None),
    "verified_at": ("last time the price was seen at its source (ISO 8601, UTC)", None),
    "decode_tokens_per_s": ("decode speed of one request on this plan (null: no bandwidth figure for the GPU)",
                            "tokens/s"),
    "max_concurrent_requests": ("requests of the planned context the plan holds at once", "requests"),
    "aggregate_tokens_per_s": ("decode speed of max_concurrent_requests together", "tokens/s"),
    "usd_per_million_tokens": ("price_per_hour / (decode_tokens_per_s x 3600) x 1e6: one request at a time",
                               "USD per 1M output tokens"),
    "usd_per_million_tokens_batched": ("price_per_hour / (aggregate_tokens_per_s x 3600) x 1e6: the plan kept full",
                                       "USD per 1M output tokens"),
}
#: JSON Schema formats of setup fields typed str (datetime fields get ``date-time`` from pydantic)
FORMATS = {"fx_date": "date"}
SetupItem = _published("SetupItem", Setup, SETUP_DOCS, doc="One rentable deployment: ``Setup`` "
                       "(pipeline/compute/setups.py) as published, closed to unknown keys.")


class ThroughputCell(_Strict):
    gpus: int = d("GPUs of the plan", unit="GPUs")
    decodeTokensPerS: float | None = d("single-stream decode speed by the engine model (bandwidth share, per-layer "
                                       "and all-reduce costs; null: no bandwidth figure for the GPU)",
                                       unit="tokens/s")
    prefillTokensPerS: float | None = d("prefill speed estimate (null: no compute figure for the GPU)", unit="tokens/s")
    ttftMs: float | None = d("time to first token for the scenario's prompt (null: no compute figure)", unit="ms")
    decodeTokensPerSRange: list[float] | None = d(
        "[low, high] of decodeTokensPerS: the calibration band of the engine, GPU class and model class "
        "(docs/calibration.md)", default=None, unit="tokens/s")
    prefillTokensPerSRange: list[float] | None = d("[low, high] of prefillTokensPerS (calibration band)", default=None,
                                                   unit="tokens/s")


class Throughput(_Strict):
    scenario: str = d("the request the estimates are for (same as gpusNeeded.scenario)")
    cells: dict[str, ThroughputCell] = d("keyed '<gpu id>:<seed column>', for every gpusNeeded cell with a plan")


FineTuning = _published("FineTuning", FineTuneMemory, {
    "method": ("qlora, lora or full", None),
    "gpus": ("GPUs assumed", "GPUs"),
    "weights_gib": ("frozen or trained weights in memory", "GiB"),
    "adapters_and_optimizer_gib": ("trainable weights, gradients and optimizer states", "GiB"),
    "activations_gib": ("activations with gradient checkpointing", "GiB"),
    "total_gib": ("total per GPU", "GiB"),
    "trainable_parameters": ("parameters trained", "parameters"),
    "assumptions": ("sequence length, batch, LoRA rank and other assumptions", None),
})


class FineTuningByMethod(_Strict):
    qlora: FineTuning = d("QLoRA (4-bit frozen base)")
    lora: FineTuning = d("LoRA (16-bit frozen base)")
    full: FineTuning = d("full fine-tuning (mixed precision, Adam)")


LaunchCommand = _published("LaunchCommand", Launch, {
    "engine": ("engine id", None),
    "command": ("shell command serving the cheapest setup (or the H100 plan when nothing is rentable)", None),
    "nodes": ("machines the command spans", "machines"),
    "note": ("what else the command needs (Ray cluster, RPC servers, ...)", None),
})


PublishedParameterCounts = _published("PublishedParameterCounts", ParameterCounts, {
    "total": ("parameters sizing uses (tied embeddings once, vision tower included, MTP heads excluded)",
              "parameters"),
    "active": ("parameters a token's full forward pass uses (MoE: the routed share; the embedding lookup and any "
               "vision/audio tower included)", "parameters"),
    "embedding": ("input embeddings + untied LM head", "parameters"),
    "non_embedding": ("total - embedding", "parameters"),
    "vision": ("vision tower", "parameters"),
    "mtp": ("multi-token-prediction heads shipped but not served", "parameters"),
    "config_total": ("total from config arithmetic", "parameters"),
    "config_active": ("active from config arithmetic", "parameters"),
    "declared_total": ("total declared by a spec or the Hub (null: none)", "parameters"),
    "declared_active": ("active declared by a spec (null: none)", "parameters"),
    "used": ("where total/active come from: config, spec or safetensors", None),
    "declared_source": ("where the declared counts were read", None),
    "safetensors_total": ("parameter count the safetensors metadata stores (packed FP4 counts half)", "parameters"),
    "checkpoint_bytes": ("size of the checkpoint's weight files", "bytes"),
    "checkpoint_parameters": ("served parameters counted from the checkpoint (see checkpoint_parameters_source; "
                              "null: not known)",
                              "parameters"),
    "difference_pct": ("(config_total - checkpoint_parameters) / checkpoint_parameters", "percent"),
    "used_reason": ("why total is what it is: the checkpoint's exact count (config arithmetic then an estimate, "
                    "its difference stated), a spec's, or config arithmetic", None),
    "audio": ("audio encoder and its projector (included in total)", "parameters"),
    "active_model_card": ("active parameters without the embedding lookup (the model-card convention)",
                          "parameters"),
    "checkpoint_parameters_source": ("safetensors headers (exact), the Hub's safetensors counts of an unquantized "
                                     "checkpoint (exact: stored elements less MTP heads), or the index's "
                                     "total_size divided by the dtype width (an estimate)", None),
    "config_native_bytes": ("native weights by config arithmetic (to compare with checkpoint_bytes)", "bytes"),
    "checkpoint_bytes_difference_pct": ("(config_native_bytes - checkpoint_bytes) / checkpoint_bytes", "percent"),
    "active_text": ("the text decoder's active parameters as multimodal model cards quote them: active_model_card "
                    "without the vision and audio towers", "parameters"),
    "exact": ("true: total is counted from the checkpoint's tensor shapes (shard headers, or the Hub's per-dtype "
              "counts of an unquantized checkpoint); false: config arithmetic or a spec, an estimate", None),
    "checkpoint_bytes_by_dtype": ("bytes the checkpoint stores per dtype (shard headers, or the Hub's per-dtype "
                                  "counts x the dtype's width; null: not known)", "bytes"),
})


class GpuBox(_Strict):
    gpu: str = d("canonical GPU id")
    name: str = d("GPU display name")
    format: str = d("most faithful weight format that fits on one such GPU")


class NoteBox(_Strict):
    note: str = d("why there is no GPU to recommend")


class Recommendations(_Strict):
    bestSingleGpu: GpuBox | NoteBox = d("smallest discrete GPU that holds the model alone")
    bestValue: GpuBox | None = d("cheapest consumer/workstation GPU (launch MSRP) that holds it alone")
    appleUnifiedMemory: GpuBox | NoteBox = d("smallest Mac whose GPU share holds it")
    cloudFrom: SetupItem | None = d("the cheapest on-demand setup (first of cheapestSetups)")


class Provenance(BaseModel):
    """Where the snapshot's inputs came from (open: stages may add keys, e.g. replay flags)."""

    model_config = ConfigDict(extra="allow")
    code_version: str | None = d("git commit of the code that built the file (null: not recorded)", default=None)
    revision: str | None = d("Hub commit sha of the model (or spec:<hash> for a spec)", default=None)


class FxStatus(_Strict):
    date: str = d("date of the ECB reference rate (YYYY-MM-DD)", fmt="date")
    ageDays: int = d("days between that date and the snapshot's as_of", unit="days")
    stale: bool = d("older than 4 days (pipeline.compute.setups.FX_STALE_AFTER_DAYS): converted prices may be off")


class ModelExport(_Strict):
    """``models/<id>.json``. The first block is seed 004's contract; keep names and types, add new keys only."""

    id: str = d("model id (file name, URL slug source)")
    name: str = d("display name")
    repo: str = d("Hugging Face repo")
    lab: Lab = d("who released it")
    released: str | None = d("release date YYYY-MM-DD: the watchlist's date, else the Hub repo's creation date",
                             fmt="date")
    parameters: float = d("total parameters", unit="billions")
    activeParameters: float = d("parameters active per token: total minus the routed experts a token skips (the "
                                "embedding lookup counted)", unit="billions")
    activeParametersModelCard: float = d("parameters active per token as model cards count them: the embedding "
                                         "lookup left out (gpt-oss-120b: 5.13)", unit="billions")
    maxContext: int | None = d("longest context the config allows", unit="tokens")
    architecture: str = d("layers and layer kinds, as seed 004 writes them")
    page: str = d("URL of the model's page")
    calculator: str = d("URL of the calculator preset")
    weightsGiB: WeightsGiB = d("weights per format", unit="GiB")
    kvCacheGiBPerRequest: list[KVRow] = d("KV cache of one request at 8K, 32K, 128K and 1M tokens (contexts above "
                                          "maxContext left out)", min_length=1)
    recurrentStateGiBPerRequest: float = d("fixed state of linear-attention/SSM layers per request", unit="GiB")
    gpusNeeded: GpusNeeded = d("fewest GPUs per seed GPU and format column")
    ggufFiles: dict[str, GgufFiles] | None = d("GGUF files by quant type (null: no GGUF repo tracked)")
    runsWith: list[str] = d("engines that can serve the model: they implement its architecture and load its native "
                            "checkpoint format on at least one GPU (display names, sorted)")
    verified: str | None = d("oldest date (YYYY-MM-DD, UTC) the prices behind cheapestSetups were last seen at their "
                             "source; null without setups", fmt="date")
    updated: str = d("when the file was built (ISO 8601, UTC)", fmt="date-time")
    # additions
    cheapestSetups: list[SetupItem] = d("cheapest on-demand deployments, most faithful format per rented "
                                        "configuration, cheapest first")
    spotSetups: list[SetupItem] = d("the same from spot, marketplace and bid-statistics prices (never mixed with "
                                    "on-demand)")
    throughput: Throughput = d("decode/prefill estimates for the gpusNeeded plans")
    fineTuning: FineTuningByMethod = d("fine-tuning memory per method")
    launch: LaunchCommand | None = d("how to serve the cheapest setup (null: no plan)")
    recommendations: Recommendations = d("seed 000's recommendation boxes")
    derived: dict[str, DerivedFact] = d("facts derived from the Hub payload, each with its rule")
    parameterCounts: PublishedParameterCounts = d("parameter counts by group and where they came from")
    provenance: Provenance = d("inputs of this snapshot")
    fx: FxStatus | None = d("the oldest ECB rate behind cheapestSetups' USD prices (null: all listed in USD or no "
                            "setups)", default=None)
    cheapestSetupsByLoad: list[LoadAnswer] = d("the cheapest on-demand setups at each standard load (8K x 1, 32K x 8, "
                                               "128K x 1 where the model reaches it, its maximum context x 1): "
                                               "distinct setups, by price and by cost per output token", default=[])


class SetupServing(_Strict):
    """A setup served at its load's standard workload (``sizing_core.serving``, as ``vramlab fit --rate``/
    ``--concurrency`` answers; the keys of fit's ``serving`` object and the service-level figures)."""

    rate: float | None = d("arrival rate of the workload (null: a closed loop)", unit="requests/s")
    concurrency: int | None = d("clients in a closed loop", unit="requests")
    ttftMs: float = d("mean time to first token", unit="ms")
    ttftMsP90: float = d("time to first token, 90th percentile", unit="ms")
    itlMs: float = d("inter-token latency at the running batch", unit="ms")
    e2eMs: float = d("mean end-to-end latency", unit="ms")
    e2eMsP90: float = d("end-to-end latency, 90th percentile", unit="ms")
    outputTokensPerS: float = d("output tokens served per second at the load", unit="tokens/s")
    requestsPerS: float = d("requests completed per second", unit="requests/s")
    meanBatch: float = d("requests running in the engine, mean", unit="requests")
    saturated: bool = d("the load exceeds what the setup sustains")
    maxRate: float = d("the highest request rate the setup sustains", unit="requests/s")
    ttftMsRange: list[float] = d("TTFT range from the at-load residual bands", unit="ms")
    itlMsRange: list[float] = d("ITL range from the at-load residual bands", unit="ms")
    e2eMsRange: list[float] = d("E2E range from the at-load residual bands", unit="ms")
    prefillComputeKnown: bool = d("the GPU's tensor-core rate is known, so TTFT counts the prompt's compute "
                                  "(false: TTFT counts only the bytes streamed, too low; no TTFT level is met)")
    tokensPerSPerUser: float = d("decode rate one user sees while its answer streams: 1000 / itlMs",
                                 unit="tokens/s")
    headroom: float | None = d("maxRate over the rate served (null: unbounded)")
    usdPerMillionOutputTokens: float | None = d("pricePerHour / (outputTokensPerS x 3600) x 1e6",
                                                unit="USD per 1M output tokens")
    usdPerMillionOutputTokensRange: list[float] | None = d("its range from the at-load E2E band",
                                                           unit="USD per 1M output tokens")
    meetsLevel: bool | None = d("meets the level asked (here the default floor)")
    meetsDefaultFloor: bool = d("meets the default interactive floor (defaultFloor)")
    shortfall: list[str] = d("what it misses of the level, in words (empty: meets it)")


class LoadSetupItem(SetupItem):  # type: ignore[misc,valid-type]
    serving: SetupServing | None = d("the setup at the load's standard workload (null: it serves no request of it)",
                                     default=None)


class LoadWorkload(_Strict):
    inputTokens: int = d("prompt tokens of each request", unit="tokens")
    outputTokens: int = d("output tokens of each request", unit="tokens")
    concurrency: int = d("clients in a closed loop", unit="requests")


class ServiceFloor(_Strict):
    ttftMsP90: float | None = d("time to first token at p90 at most this", unit="ms")
    minTokensPerSPerUser: float | None = d("at least this decode rate per user", unit="tokens/s")


class LoadAnswer(_Strict):
    context: int = d("tokens per request", unit="tokens")
    concurrency: int = d("requests served at once", unit="requests")
    label: str = d("the load as the report shows it (\"32K x 8\")")
    workload: LoadWorkload | None = d("the standard workload the setups are served at: `concurrency` clients, "
                                      "each prompt context - 512 tokens, each answer 512", default=None)
    defaultFloor: ServiceFloor | None = d("the default interactive floor (docs/decisions.md)", default=None)
    atDefaultFloor: list[LoadSetupItem] = d("the cheapest setups meeting the default floor at the workload, "
                                            "searched in price order among up to 320 candidates of the GPU kinds "
                                            "and instance sizes that may meet it (most faithful "
                                            "format per rented configuration, multi-machine at 1.25x, llama.cpp "
                                            "RPC chains last): what `vramlab cheapest --concurrency K "
                                            "--input-tokens I --output-tokens O` answers", default=[])
    floorNote: str | None = d("why no setup meets the default floor, with the nearest listed miss (null: one "
                              "does)", default=None)
    byPrice: list[LoadSetupItem] = d("the cheapest setups serving the load, most faithful format per rented "
                                 "configuration, cheapest $/h first (multi-machine setups ranked at 1.25x)")
    byCostPerToken: list[LoadSetupItem] = d("the same ranked by usdPerMillionTokensAtLoad, lowest first (setups whose "
                                        "GPU has no bandwidth figure left out)")


class GgufFiles(_Strict):
    files: list[str] = d("file names (split files listed in order)")
    bytes: int = d("their total size", unit="bytes")
    repo: str = d("the GGUF repo")


class DerivedFact(_Strict):
    value: Any = d("the fact (type depends on the fact; null = unknown)")
    rule: str = d("how it was derived")


class IndexEntry(_Strict):
    id: str = d("model id")
    repo: str = d("Hugging Face repo")
    status: Literal["ok", "failed"] = d("ok: models/<id>.json exists; failed: the model could not be sized")
    name: str | None = d("display name (null when failed)")
    parameters: float | None = d("total parameters (null when failed)", unit="billions")
    path: str | None = d("relative path of the model file (null when failed)")
    reason: str | None = d("why it could not be sized (null when ok)")


class IndexFile(_Strict):
    """``index.json``: every tracked model, sized or not."""

    snapshot_id: str = d("snapshot this index belongs to")
    models: list[IndexEntry] = d("one entry per tracked model")


class SourceStatus(_Strict):
    verified_at: str | None = d("last successful fetch: when its prices were last seen at the source (ISO 8601)",
                                fmt="date-time")
    last_outcome: str | None = d("outcome of the last fetch attempt (ok, http_error, timeout, degraded, ...)")
    stale: bool = d("verified more than 2 hours before as_of")
    degraded: bool = d("the last live fetch tripped a drift canary (unknown top-level shape, new enum values, or "
                       "more than 50% fewer offers than the last good fetch): its offers were not loaded, the last "
                       "good ones stay published (and turn stale)", default=False)
    drift: list[str] = d("what changed, one sentence per canary (empty unless degraded)", default_factory=list)


class HistoryPart(_Strict):
    path: str = d("part file, relative to the exports folder (history/price_observations/date=YYYY-MM-DD/...)")
    date: str = d("UTC day of every observed_at in the part (YYYY-MM-DD)", fmt="date")
    rows: int = d("observations in the part", unit="rows")
    sha256: str = d("sha256 of the part file")


class Manifest(_Strict):
    snapshot_id: str = d("snapshot id (UTC timestamp)")
    generated_at: str = d("when the snapshot was built (ISO 8601)", fmt="date-time")
    schema_version: str = d("version of this contract; bumped when a published name or type changes")
    mode: Literal["replay", "live"] = d("replay (bundled recordings) or live")
    as_of: str = d("the time prices are judged fresh or stale against (ISO 8601)", fmt="date-time")
    sources: dict[str, SourceStatus] = d("per price source: verification and staleness")
    row_counts: dict[str, int] = d("rows per published table", unit="rows")
    files: dict[str, str] = d("relative path -> sha256 of every file of the snapshot folder")
    fx: FxStatus | None = d("the newest ECB rate among current offers' conversions (null: none converted)",
                            default=None)
    left_out: dict[str, dict[str, int]] = d("per published table, rows a reader cannot place (the report leaves "
                                            "them out), by reason: not_judged (NULL verdict), no_gpu, no_provider, "
                                            "no_time, bad_price; empty: none", unit="rows", default_factory=dict)
    history: list[HistoryPart] = d("price-observation partitions this snapshot covers (shared, append-only files "
                                   "under exports/history/, hard-linked into the snapshot's price_observations/)")


ModelExport.model_rebuild()

#: published JSON file kind -> (model, schema file name)
JSON_FILES: dict[str, tuple[type[BaseModel], str]] = {
    "models/<id>.json": (ModelExport, "model.schema.json"),
    "index.json": (IndexFile, "index.schema.json"),
    "manifest.json": (Manifest, "manifest.schema.json"),
}


def _close(node: Any) -> None:  # noqa: ANN401 - a JSON Schema node
    """Every declared property is required (we always write every key)."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node["required"] = list(node["properties"])
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) consumers validate a file with."""
    schema = model.model_json_schema(mode="serialization", by_alias=True)
    _close(schema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://vramlab.dev/schemas/v{SCHEMA_VERSION}/{model.__name__}.json", **schema}


def field_info(model: type[BaseModel], name: str) -> FieldInfo:
    return model.model_fields[name]
