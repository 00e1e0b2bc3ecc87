"""Offer quality: between the loaded offers and the cheapest setups, decide which offers a user can really rent at
the listed price. Computed in DuckDB (``sql/004_offer_quality.sql``); see :mod:`pipeline.quality.offers`."""
