#!/usr/bin/env python3
"""Prints the criterion medians of the last `cargo bench -p fulcrum-benches` as a table
(ns per operation, and millions of operations per second). A benchmark that declares a
throughput in elements (a burst of 64 frames) is reported per element: ns per frame."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
rows = {}
for est in sorted(root.glob("**/new/estimates.json")):
    bench = est.parent.parent.relative_to(root).as_posix()
    ns = json.loads(est.read_text())["median"]["point_estimate"]
    meta = est.parent / "benchmark.json"
    if meta.exists():
        elements = (json.loads(meta.read_text()).get("throughput") or {}).get("Elements")
        if elements:
            ns /= elements
    rows[bench] = ns

groups = {}
for bench, ns in rows.items():
    head, _, size = bench.rpartition("/")
    if size.isdigit():
        groups.setdefault(head, {})[int(size)] = ns
    else:
        groups.setdefault(bench, {})[None] = ns

sizes = sorted({s for g in groups.values() for s in g if s is not None})
if sizes:
    print("| decision (ns) | " + " | ".join(f"{s} services" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name, g in groups.items():
        if None in g:
            continue
        print(f"| {name.removeprefix('select/')} | " + " | ".join(
            f"{g[s]:.1f}" if s in g else "" for s in sizes) + " |")
print()
print("| operation | ns | M/s |")
print("|---|---|---|")
for name, g in groups.items():
    if None in g:
        print(f"| {name} | {g[None]:.2f} | {1000 / g[None]:.0f} |")
