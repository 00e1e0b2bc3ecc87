"""vramlab track: add a Hub model to the watchlist, so the next run sizes and publishes it."""

from __future__ import annotations

import argparse

from pipeline.cli.args import data_dir_flag, data_dir_of, examples, json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    track = sub.add_parser("track", help="add a Hub model to the watchlist: the next run sizes and publishes it",
                           description="Add a Hugging Face repo to the data directory's watchlist (a copy of the "
                                       "packaged pipeline/data/watchlist.json, made on first use; the packaged file "
                                       "is never changed). The repo is looked up first (live with VRAMLAB_LIVE=1, "
                                       "else from the replay bundle), so only a model vramlab can size is added; "
                                       "the next `vramlab run` ingests, sizes and publishes it.",
                           epilog=examples("vramlab track Qwen/Qwen3-235B-A22B",
                                           "vramlab track openai/gpt-oss-120b --id gpt-oss-120b --name 'gpt-oss 120B'",
                                           "VRAMLAB_LIVE=1 vramlab track mistralai/Mistral-Small-24B-Instruct-2501"))
    track.add_argument("repo", metavar="REPO", help="Hugging Face repo id, org/name")
    track.add_argument("--id", default=None, metavar="ID", help="the model id to use (default: the repo name in "
                                                                  "lower case)")
    track.add_argument("--name", default=None, metavar="NAME", help="display name (default: the repo name)")
    data_dir_flag(track)
    json_flag(track, "the watchlist entry added (or already there) as one JSON object")
    track.set_defaults(func=cmd_track)


def cmd_track(args: argparse.Namespace) -> int:
    from pipeline.cli.watch import track_repo

    entry, added, path = track_repo(args.repo, data_dir_of(args), model_id=args.id, name=args.name)
    if args.json:
        print_json({"entry": entry, "added": added, "watchlist": str(path)})
        return 0
    if added:
        print(f"tracking {entry['repo']} as {entry['id']} in {path}; the next `vramlab run` sizes and publishes it")
    else:
        print(f"{entry['repo']} is already tracked as {entry['id']} ({path})")
    return 0
