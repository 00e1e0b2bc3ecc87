"""Operations: what a person or the schedule starts (one run of the graph, rebuilding the database from the raw
landing, backfilling the replay series). The top of the layer order under the command line: operations may
import the Dagster definitions, never the other way round."""
