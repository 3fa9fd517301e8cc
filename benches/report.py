#!/usr/bin/env python3
"""Turns criterion's results and the memory probe's rows into docs/bench-results.md.

Usage: report.py CRITERION_DIR MEMORY_TSV OUT_MD COMMAND LOAD_AT_START [FAILED...]

Reads every */new/benchmark.json (ids, throughput) and estimates.json (median.point_estimate,
ns per iteration) under CRITERION_DIR (one subdirectory per round); ns per operation = median /
throughput elements, and of several rounds' medians for one cell the lowest is kept.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

TICKWHEEL = ["tw-hashed", "tw-hierarchical", "tw-heap", "tw-lazy-heap"]
PEERS = ["tokio-delayqueue", "timer-queue", "hhwt", "binaryheap-lazy", "btreemap"]
WORKLOADS = {
    "insert": "one insert into an empty structure (deadlines uniform in [1 ms, 60 s])",
    "insert_cancel": "one insert or one cancel (insert N, cancel all in random order)",
    "churn_random": "one cancel or one insert (cancel a random live timer, insert a new one)",
    "churn_io": "one insert, cancel or reset (request deadlines cancelled 256 steps later, "
    "idle timeouts reset to now + 30 s, clock polled every max(N/1000, 10) steps)",
    "reset_later": "one reset of a random idle timeout to now + 30 s (clock as in churn_io)",
    "expire": "one fired timer (N timers over 10 s, polled in 1 ms steps)",
    "poll_idle": "one event-loop turn: poll(now) + next_deadline(), nothing due "
    "(tokio-delayqueue: poll_expired only; its runtime tracks the wake-up)",
}
SIZES = ["10000", "100000", "1000000"]
SIZE_LABEL = {"10000": "10k", "100000": "100k", "1000000": "1M"}


def sh(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def load_results(root):
    results = {}  # (workload, impl, size) -> ns per op
    for bench in Path(root).glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        elements = (meta.get("throughput") or {}).get("Elements") or 1
        median = est["median"]["point_estimate"]
        key = (meta["group_id"], meta["function_id"], meta["value_str"])
        results[key] = min(results.get(key, float("inf")), median / elements)
    return results


def load_memory(path):
    rows = {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return rows
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) == 4:
            rows[parts[0]] = parts[1:]
    return rows


def fmt_ns(ns):
    if ns >= 100:
        return f"{ns:.0f}"
    if ns >= 10:
        return f"{ns:.1f}"
    return f"{ns:.2f}"


def main():
    crit, mem_path, out, command, load_start = sys.argv[1:6]
    failed = sys.argv[6:]
    res = load_results(crit)
    mem = load_memory(mem_path)
    load_end = Path("/proc/loadavg").read_text().split()[0]
    dirty = sh("git", "status", "--porcelain", "--untracked-files=no", "--", "crates/tickwheel")
    lines = [
        "# Benchmark results",
        "",
        f"Written by `{command}`; regenerate rather than edit. How each structure is driven: "
        "`benches/README.md`.",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- machine: {os.cpu_count()} CPUs (nproc), {cpu_model()}, "
        f"{sh('uname', '-sr')}, {sh('rustc', '-V')}",
        f"- command: `{command}`",
        f"- tree: commit {sh('git', 'rev-parse', '--short', 'HEAD')}"
        + ("; uncommitted changes in crates/tickwheel were measured" if dirty else ""),
        f"- load average (1 min) at start {load_start}, at end {load_end} on "
        f"{os.cpu_count()} CPUs: above ~0.5 other work was running and medians are noisy",
    ]
    if failed:
        lines.append(f"- runs that failed or timed out (missing below): {', '.join(failed)}")
    lines += [
        "",
        "Median ns per operation (lower is better; with several rounds, the lowest of the "
        "rounds' medians). In brackets: the ratio to the fastest peer "
        "at that size (below 1.00 = faster than every peer). **Bold**: fastest overall.",
    ]
    summary = []
    for workload, what in WORKLOADS.items():
        sizes = [s for s in SIZES if any(k[0] == workload and k[2] == s for k in res)]
        if not sizes:
            continue
        lines += ["", f"## {workload}", "", f"One operation = {what}.", ""]
        lines.append("| implementation | " + " | ".join(SIZE_LABEL[s] for s in sizes) + " |")
        lines.append("|---|" + "---:|" * len(sizes))
        best_peer = {}
        best_all = {}
        for s in sizes:
            peers = [res[(workload, p, s)] for p in PEERS if (workload, p, s) in res]
            best_peer[s] = min(peers) if peers else None
            alls = [res[(workload, i, s)] for i in TICKWHEEL + PEERS if (workload, i, s) in res]
            best_all[s] = min(alls) if alls else None
        for impl in TICKWHEEL + PEERS:
            cells = []
            for s in sizes:
                ns = res.get((workload, impl, s))
                if ns is None:
                    cells.append("–")
                    continue
                cell = fmt_ns(ns)
                if best_peer[s]:
                    cell += f" ({ns / best_peer[s]:.2f})"
                if ns == best_all[s]:
                    cell = f"**{cell}**"
                cells.append(cell)
            lines.append(f"| {impl} | " + " | ".join(cells) + " |")
        for s in sizes:
            tw = [(res[(workload, i, s)], i) for i in TICKWHEEL if (workload, i, s) in res]
            pe = [(res[(workload, p, s)], p) for p in PEERS if (workload, p, s) in res]
            hier = res.get((workload, "tw-hierarchical", s))
            if tw and pe:
                summary.append((workload, s, min(tw), min(pe), hier))
    lines += [
        "",
        "## Best tickwheel against best peer",
        "",
        "| workload | size | best tickwheel (ns) | best peer (ns) | peer ÷ tickwheel | "
        "peer ÷ tw-hierarchical |",
        "|---|---|---|---|---:|---:|",
    ]
    for workload, s, (tw_ns, tw), (pe_ns, pe), hier in summary:
        hier_ratio = f"{pe_ns / hier:.2f}×" if hier else "–"
        lines.append(
            f"| {workload} | {SIZE_LABEL[s]} | {tw} {fmt_ns(tw_ns)} | {pe} {fmt_ns(pe_ns)} | "
            f"{pe_ns / tw_ns:.2f}× | {hier_ratio} |"
        )
    lines += [
        "",
        "## Memory per live timer",
        "",
        "1M timers with a `u64` payload, inserted into an empty structure (no preallocation) in a "
        "fresh process (`cargo run --release -p tickwheel-benches --bin memory`). Peak RSS Δ is "
        "VmHWM after minus VmRSS before, so it includes growth; RSS Δ is what stays; "
        "`allocated_bytes` is the structure's own count.",
        "",
        "| implementation | peak RSS Δ (B/timer) | RSS Δ (B/timer) | allocated_bytes (B/timer) |",
        "|---|---:|---:|---:|",
    ]
    for impl in TICKWHEEL + PEERS:
        row = mem.get(impl)
        if row:
            lines.append(f"| {impl} | {row[0]} | {row[1]} | {row[2]} |")
        else:
            lines.append(f"| {impl} | – | – | – |")
    lines += ["", "## Goals", ""]
    lines += goals(res, mem, summary)
    text = "\n".join(lines) + "\n"
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)
    print(text)


def goals(res, mem, summary):
    out = []
    # (a) best tickwheel faster than every peer at 100k and 1M.
    losses = [
        f"{w} {SIZE_LABEL[s]} ({tw} {fmt_ns(tw_ns)} vs {pe} {fmt_ns(pe_ns)})"
        for w, s, (tw_ns, tw), (pe_ns, pe), _ in summary
        if s in ("100000", "1000000") and tw_ns >= pe_ns
    ]
    out.append(
        "- (a) best tickwheel faster than every peer on every workload at 100k and 1M: "
        + ("**holds**" if not losses else "**does not hold**: " + "; ".join(losses))
    )
    # (b) hierarchical >= 2x best peer on churn_io, insert_cancel, reset_later.
    short = []
    for w, s, _, (pe_ns, pe), hier in summary:
        if w in ("churn_io", "insert_cancel", "reset_later") and s in ("100000", "1000000"):
            if hier is None or pe_ns / hier < 2:
                ratio = f"{pe_ns / hier:.2f}×" if hier else "missing"
                short.append(f"{w} {SIZE_LABEL[s]} {ratio} vs {pe}")
    out.append(
        "- (b) tw-hierarchical ≥ 2× faster than the best peer on churn_io, insert_cancel, "
        "reset_later (100k, 1M): "
        + ("**holds**" if not short else "**does not hold**: " + "; ".join(short))
    )
    # (c) poll_idle < 10 ns for every tickwheel implementation and size.
    slow = [
        f"{i} {SIZE_LABEL[s]} {fmt_ns(res[('poll_idle', i, s)])} ns"
        for i in TICKWHEEL
        for s in SIZES
        if ("poll_idle", i, s) in res and res[("poll_idle", i, s)] >= 10
    ]
    out.append(
        "- (c) poll_idle < 10 ns regardless of N: "
        + ("**holds**" if not slow else "**does not hold**: " + "; ".join(slow))
    )
    # (d) memory <= 40 B per live timer for every tickwheel implementation (peak RSS delta).
    fat = []
    for i in TICKWHEEL:
        row = mem.get(i)
        if row is None:
            fat.append(f"{i} not measured")
        elif float(row[0]) > 40:
            fat.append(f"{i} {row[0]} B")
    out.append(
        "- (d) memory per live timer ≤ 40 B (peak RSS Δ) for every tickwheel implementation: "
        + ("**holds**" if not fat else "**does not hold**: " + "; ".join(fat))
    )
    return out


if __name__ == "__main__":
    main()
