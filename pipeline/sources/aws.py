"""AWS EC2 on-demand prices from the public bulk price files, one per region (no key):
``https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv``.

The files are hundreds of MB, so the fetch streams them and keeps the 5 metadata lines, the header and the rows
of GPU instance families only (what lands is exactly that subset of the bytes received, line for line). Rows are
filtered as SkyPilot does: OnDemand, Linux, no pre-installed software, CapacityStatus Used, Shared tenancy
(Dedicated Host rows price a whole host, not the instance), Product Family "Compute Instance".
The real file writes "no pre-installed software" as the literal ``NA`` (older files and SkyPilot's tests leave it
empty): both are accepted, anything else ("SQL Web", ...) is another product. Rows of other terms, operating
systems, tenancies, capacity reservations or ``MarketOption`` values are counted as ignored, not rejected.
GPU names come from the family (``FAMILIES``) with SkyPilot's overrides for AWS's own mistakes (gpu_map.csv).
Spot prices need AWS credentials (DescribeSpotPriceHistory) and are not fetched.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    NOT_A_GPU_OFFER,
    Ignored,
    ParseError,
    ParseResult,
    RawPart,
    RawPayload,
    Source,
    collect,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve
from pipeline.sources.http import (
    ERROR_BODY_MAX,
    KEPT_HEADERS,
    HttpStatusError,
    ResponseTooLarge,
    capped_bytes,
    capped_lines,
    deadline_for,
)

URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"
REGIONS = ("us-east-1", "us-west-2", "eu-west-1")
NO_SOFTWARE = ("NA", "")  # "Pre Installed S/W" of a plain instance: "NA" in the real files, empty in older ones
OTHER_TERMS = Ignored("other terms, OS, tenancy or software")
DUPLICATE = Ignored("second row for the same instance type and region")
#: families sold as slices of one card: family -> memory of the whole card (GB)
SLICED_FAMILIES = {"g6f": 24, "gr6f": 24}
#: instance family -> GPU name as AWS's GpuInfo reports it (overrides in gpu_map.csv fix p4de/p5en/p3dn)
FAMILIES = {"p6-b300": "B300", "p6-b200": "B200", "p6e-gb200": "GB200", "p5en": "NVIDIA", "p5e": "H200",
            "p5": "H100", "p4de": "A100", "p4d": "A100", "p3dn": "V100", "p3": "V100", "g6e": "L40S", "g6f": "L4",
            "gr6f": "L4", "g6": "L4", "gr6": "L4", "g5": "A10G", "g4dn": "T4"}


def family(instance_type: str) -> str | None:
    head = instance_type.split(".")[0]
    return head if head in FAMILIES else None


class AWS(Source):
    name = provider = "aws"
    endpoint = URL
    unit = "USD per instance-hour"

    def _fetch_region(self, client: httpx.Client, region: str) -> RawPart:
        url = URL.format(region=region)
        limit = getattr(client, "max_bytes", 64 * 2**20)
        kept, size = [], 0
        deadline = deadline_for(client)
        with client.stream("GET", url, extensions={"vramlab_deadline": deadline}) as response:
            if response.status_code != 200:  # the error body kept truncated: never a whole (bomb) body in memory
                body = capped_bytes(response, url, ERROR_BODY_MAX, deadline, truncate=True)
                raise HttpStatusError(RawPart(url=url, status=response.status_code, body=body))
            # the whole regional file is scanned (hundreds of MB) but only GPU lines kept; lines, total bytes,
            # compression ratio and time are all bounded
            for n, line in enumerate(capped_lines(response, url, deadline)):
                if n < 6 or _gpu_row(line):  # 5 metadata lines + header, then GPU families only
                    kept.append(line)
                    size += len(line) + 1
                    if size > limit:
                        raise ResponseTooLarge(url, limit)
            headers = {k: response.headers[k] for k in KEPT_HEADERS if k in response.headers}
        return RawPart(url=url, status=200, body="\n".join(kept).encode(), headers=headers)

    def fetch(self, client: httpx.Client) -> RawPayload:
        parts = tuple(self._fetch_region(client, r) for r in REGIONS)
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=parts)

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        rows = []
        for part in raw.parts:
            lines = part.body.decode().splitlines()
            reader = csv.DictReader(io.StringIO("\n".join(lines[5:])))
            for col in ("Instance Type", "PricePerUnit", "TermType", "Operating System", "Region Code"):
                if col not in (reader.fieldnames or []):
                    raise ParseError(self.name, col, f"{part.url}: column missing after the 5 metadata lines")
            rows += list(reader)

        seen: set[tuple[str, str]] = set()

        def build(r):  # type: ignore[no-untyped-def]
            itype = r["Instance Type"]
            fam = family(itype)
            if not fam:
                return NOT_A_GPU_OFFER
            keep = (r["TermType"] == "OnDemand" and r["Operating System"] == "Linux"
                    and (r.get("Pre Installed S/W") or "NA") in NO_SOFTWARE
                    and (r.get("CapacityStatus") or "Used") == "Used"
                    and (r.get("Tenancy") or "Shared") == "Shared" and (r.get("Unit") or "Hrs") == "Hrs"
                    and (r.get("MarketOption") or "OnDemand") == "OnDemand"
                    and (r.get("Product Family") or "Compute Instance").startswith("Compute Instance"))
            if not keep:
                return OTHER_TERMS
            key = (itype, r["Region Code"])
            if key in seen:
                return DUPLICATE
            seen.add(key)
            count = number(self.name, r.get("GPU") or 0, "GPU")
            memory = (r.get("GPU Memory") or "").split(" ")[0]  # the instance's total ("640 GB"), or "NA"
            if itype.startswith("p5.4xlarge"):
                count, memory = 1, ""  # fetch_aws.py: the API reports 8 (and their memory) for a 1-GPU size
            total = float(memory) if memory.replace(".", "").isdigit() else None
            share, card = 1.0, None
            if fam in SLICED_FAMILIES and total and total < SLICED_FAMILIES[fam]:
                card = SLICED_FAMILIES[fam]  # g6f.large: 3 GB of an L4 = 1/8 of the card
                share = count = total / card
            return make_offer(self.name, self.provider, instance_type=itype, gpu_name=FAMILIES[fam], gpu_count=count,
                              price=number(self.name, r["PricePerUnit"], "PricePerUnit"), unit="instance-hour",
                              currency=r.get("Currency", "USD"), allocation="on_demand", observed_at=raw.fetched_at,
                              rates=rates, resolve=resolve, region=r["Region Code"],
                              memory_gb=total if card else total / count if total and count else None,
                              gpu_share=share, parent_memory_gb=card,
                              vcpus=float(r["vCPU"]) if (r.get("vCPU") or "").isdigit() else None)

        return collect(rows, build)


def _gpu_row(line: str) -> bool:
    """Cheap pre-filter while streaming: does a CSV line name a GPU instance family?"""
    return any(f'"{fam}.' in line for fam in FAMILIES)
