#!/usr/bin/env python3
"""Checks that normd's server stages include only the stages below them.

The server is layered (docs/ARCHITECTURE.md): a request flows rpc -> scheduling -> batching ->
executors, and every stage may use core and observability. Shared-memory regions (regions/) sit
beside them: rpc resolves requests' references there, and startup lends them the backend's device
memory. An #include that points back up (an
executor including the scheduler, say) would make a circle in the structure map; this check fails
on the first such include, naming the file, the line and the rule.

Usage: check_layering.py REPO_ROOT
"""
import pathlib
import re
import sys

# What each stage may include besides itself, base/, kernels/, the generated proto and libraries.
ALLOWED = {
    "core": set(),
    "observability": {"core"},
    "executors": {"core", "observability"},
    "batching": {"core", "observability", "executors"},
    "scheduling": {"core", "observability", "executors", "batching"},
    "regions": {"core", "observability"},
    "rpc": {"core", "observability", "scheduling", "batching", "regions"},
    "config": {"core", "observability", "executors", "batching"},
    "startup": {"core", "observability", "executors", "batching", "config", "regions"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"server/([a-z_]+)/')


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    server = root / "server"
    problems = []
    stages_seen = set()
    for path in sorted(server.glob("*/*")):
        if path.suffix not in (".h", ".cc"):
            continue
        stage = path.parent.name
        stages_seen.add(stage)
        if stage not in ALLOWED:
            problems.append(f"{path.relative_to(root)}: folder server/{stage}/ has no layering rule")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if match is None:
                continue
            target = match.group(1)
            if target != stage and target not in ALLOWED[stage]:
                problems.append(
                    f"{path.relative_to(root)}:{number}: server/{stage}/ includes server/{target}/, "
                    f"which it may not (allowed: {', '.join(sorted(ALLOWED[stage])) or 'none'})")
    for path in sorted((root / "kernels").rglob("*")):
        if path.suffix in (".h", ".cc", ".cu", ".cuh") and '"server/' in path.read_text():
            problems.append(f"{path.relative_to(root)}: kernels/ must not include server code")
    for path in sorted((root / "client").glob("*")):
        if path.suffix in (".h", ".cc") and '#include "server/' in path.read_text():
            problems.append(f"{path.relative_to(root)}: client/ must not include server code")
    missing = set(ALLOWED) - stages_seen
    if missing:
        problems.append(f"stages with no files (stale rule?): {', '.join(sorted(missing))}")
    for problem in problems:
        print(problem)
    print(f"check_layering: {len(problems)} problem(s) in {len(stages_seen)} stages")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
