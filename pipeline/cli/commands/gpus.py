"""vramlab gpus: current GPU offers from the latest snapshot, or the GPU catalog."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.args import PRICE, data_dir_flag, data_dir_of, examples, json_flag, print_json
from pipeline.text import iso_utc


def register(sub: argparse._SubParsersAction) -> None:
    gpus = sub.add_parser("gpus", help="current GPU offers, cheapest first (like sky show-gpus)",
                          description="Current GPU offers from the latest snapshot, cheapest $/GPU-hour first. "
                                      "Without GPU: the cheapest offer per GPU kind; with GPU: the cheapest offer "
                                      "per provider and GPU, its regions and offers counted (--offers: every "
                                      "offer).",
                          epilog=examples("vramlab gpus", "vramlab gpus H100", "vramlab gpus h200:8 --provider lambda",
                                           "vramlab gpus A100 --region us --max-price 2 --spot",
                                           "vramlab gpus H100 --max-price 2.5 --offers",
                                           "vramlab gpus --catalog"))
    gpus.add_argument("gpu", nargs="?", default=None, metavar="GPU[:N]",
                      help="GPU id, alias or family, optionally with GPUs per instance (H100:8); a family name "
                           "(H100, A100) matches every variant (SXM, PCIe, NVL), an alias or variant id (h100-sxm, "
                           "h100-pcie) only itself")
    gpus.add_argument("--provider", default=None, metavar="P", help="only this provider (any case)")
    gpus.add_argument("--region", default=None, metavar="R", help="only regions starting with R (us, europe-west4)")
    gpus.add_argument("--max-price", type=PRICE, default=None, metavar="USD", help="at most this $/GPU-hour")
    gpus.add_argument("--spot", action="store_true", help="spot and marketplace offers instead of on-demand")
    gpus.add_argument("--offers", action="store_true",
                      help="every matching offer (default: the cheapest per provider and GPU, or per GPU kind "
                           "without GPU)")
    gpus.add_argument("--all", action="store_true", help="every row (default: 25); without GPU: every offer")
    gpus.add_argument("--catalog", action="store_true", help="the GPU catalog (ids, aliases, memory) instead of offers")
    data_dir_flag(gpus)
    json_flag(gpus, "a JSON array")
    gpus.set_defaults(func=cmd_gpus)


def cmd_gpus(args: argparse.Namespace) -> int:
    from pipeline.cli.resolve import family_note, gpu_family, published_snapshot, split_count
    from pipeline.exports.snapshot_offers import cheapest_by, current_offers

    if args.catalog:
        from pipeline.cli.catalog import gpu_rows

        rows = gpu_rows()
        if args.json:
            print_json(rows)
        else:
            from pipeline.cli.tables import print_gpu_catalog

            print_gpu_catalog(rows)
        return 0
    name, count = split_count(args.gpu) if args.gpu else (None, None)
    family = gpu_family(name) if name else None
    snapshot = published_snapshot(data_dir_of(args), args.provider)
    offers = current_offers(snapshot, gpus=family, count=count, provider=args.provider, region=args.region,
                            max_price=args.max_price, spot=args.spot)
    per_kind = family is None and not args.all and not args.offers
    per_provider = family is not None and not args.offers
    if per_kind:  # the cheapest offer per GPU kind
        offers = cheapest_by(offers, "gpu_id")
    elif per_provider:  # the cheapest offer per provider and GPU, its regions and offers counted
        offers = cheapest_by(offers, "provider", "gpu_id")
    rows = [_offer_row(o) for o in offers]
    if args.json:
        print_json(rows)
    else:
        from pipeline.cli.tables import print_offers_table, say

        note = family_note(name, family) if name and family else None
        if note:
            say(f"note: {note}")
        if not rows:
            asked = [f"GPU {name}{f':{count}' if count else ''}" if name else "",
                     f"provider {args.provider}" if args.provider else "",
                     f"region {args.region}*" if args.region else "",
                     f"at most ${args.max_price:g}/GPU-h" if args.max_price else ""]
            say(f"no {'spot/marketplace' if args.spot else 'on-demand'} offer matches "
                f"({', '.join(a for a in asked if a) or 'any GPU'}) in snapshot {snapshot.id}")
            return 0
        print_offers_table(rows, snapshot.id, per_kind=per_kind, limit=None if args.all else 25, spot=args.spot,
                           per_provider=per_provider)
    return 0


def _offer_row(o: dict[str, Any]) -> dict[str, Any]:
    from pipeline.cli.resolve import catalog_memory_gb

    return {"gpu_id": o["gpu_id"], "gpu_name": o["gpu_name"], "gpu_count": o["gpu_count"],
            "gpu_memory_gb": o["gpu_memory_gb"], "catalog_memory_gb": catalog_memory_gb().get(o["gpu_id"]),
            "vcpus": o["vcpus"], "ram_gb": o["ram_gb"],
            "price_per_hour_usd": o["price_per_hour_usd"], "price_per_gpu_hour_usd": o["price_per_gpu_hour_usd"],
            "provider": o["provider"], "source": o["source"], "instance_type": o["instance_type"],
            "region": o["region"], "allocation": o["allocation"], "currency": o["currency"],
            "verified_at": iso_utc(o["verified_at"]),
            # added keys: memory in two stated units, form factor, interconnect, availability
            **{k: o.get(k) for k in ("gpu_memory_gib", "gpu_memory_gb_marketed", "form_factor", "gpu_link",
                                     "cluster_fabric", "cluster_gbps", "availability_status", "available_count")},
            "availability_observed_at": iso_utc(o.get("availability_observed_at")),
            # added keys of a row that stands for several offers (the cheapest per provider and GPU, or per kind)
            **({"offer_count": o["offer_count"], "regions": o["regions"], "region_count": len(o["regions"])}
               if "offer_count" in o else {})}


