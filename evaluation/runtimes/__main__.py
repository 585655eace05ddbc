"""``python -m evaluation.runtimes install [--all | NAME ...]`` and ``status``."""

from __future__ import annotations

import argparse
import sys

from evaluation.runtimes import REGISTRY, State, state
from evaluation.runtimes.install import InstallError, install


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.runtimes")
    commands = parser.add_subparsers(dest="command", required=True)
    setup = commands.add_parser("install", help="install runtimes from their lock files")
    setup.add_argument("names", nargs="*", choices=[[], *REGISTRY], metavar="NAME")
    setup.add_argument("--all", action="store_true", help="every runtime of the registry")
    commands.add_parser("status", help="print each runtime's state")
    args = parser.parse_args(argv)
    if args.command == "status":
        worst = 0
        for name in REGISTRY:
            current, sentence = state(name)
            print(f"{name}: {current.value} - {sentence}")
            worst = max(worst, current is not State.INSTALLED)
        return worst
    names = list(REGISTRY) if args.all else args.names
    if not names:
        parser.error("name a runtime or pass --all")
    for name in names:
        try:
            _changed, sentence = install(name)
        except InstallError as exc:
            print(str(exc), file=sys.stderr)
            return 1
        print(sentence)
    return 0


if __name__ == "__main__":
    sys.exit(main())
