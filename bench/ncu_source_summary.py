#!/usr/bin/env python
"""Per-instruction counters of `ncu --import x.ncu-rep --page source --csv --print-source sass` (ncu's
SourceCounters section), summarised per kernel: instructions executed and warp-stall samples, per loop (a backward
branch's body; the innermost loops are the hot ones) and outside, by opcode, and the instructions with most samples.

    python bench/ncu_source_summary.py source.csv [label,label,...] [--top 15]
"""
import argparse
import collections
import csv
import re

STALLS = ("stall_barrier", "stall_branch_resolving", "stall_dispatch", "stall_drain", "stall_imc", "stall_lg",
          "stall_long_sb", "stall_math", "stall_membar", "stall_mio", "stall_misc", "stall_no_inst",
          "stall_not_selected", "stall_selected", "stall_short_sb", "stall_sleep", "stall_tex", "stall_wait")


def number(text):
    try:
        return float(str(text).replace(",", "")) if text not in (None, "") else 0.0
    except ValueError:
        return 0.0


def kernels(path):
    """[(name, [row dict, ...])]: the csv holds one table per kernel, each after a "Kernel Name" line."""
    out, header, rows = [], None, None
    with open(path, newline="") as f:
        for fields in csv.reader(f):
            if not fields:
                continue
            if fields[0] == "Kernel Name":
                rows = []
                out.append((fields[1], rows))
                header = None
            elif header is None and rows is not None:
                header = fields
            elif rows is not None:
                rows.append(dict(zip(header, fields)))
    return out


def opcode(source):
    m = re.match(r"\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", source)
    return m.group(1) if m else "?"


def loops(rows):
    """(start, end) row ranges of backward branches, innermost first."""
    index = {int(r["Address"], 16) if r["Address"].startswith("0x") else int(r["Address"]): i
             for i, r in enumerate(rows) if r.get("Address")}
    found = []
    for i, r in enumerate(rows):
        if opcode(r["Source"]) == "BRA":
            m = re.search(r"0x([0-9a-f]+)", r["Source"])
            if m and int(m.group(1), 16) in index and index[int(m.group(1), 16)] < i:
                found.append((index[int(m.group(1), 16)], i))
    return sorted(found, key=lambda se: se[1] - se[0])


def summarise(rows, top):
    executed = sum(number(r.get("Instructions Executed")) for r in rows)
    samples = sum(number(r.get("Warp Stall Sampling (All Samples)")) for r in rows)
    stalls = collections.Counter()
    for r in rows:
        for s in STALLS:
            stalls[s[6:]] += number(r.get(s))
    print(f"  {len(rows)} instructions, {executed:,.0f} executed (warp level), {samples:,.0f} stall samples; "
          "samples by reason: " + ", ".join(f"{k} {v / max(samples, 1):.1%}" for k, v in stalls.most_common(8)))
    seen = set()
    for start, end in loops(rows):
        body = [i for i in range(start, end + 1) if i not in seen]
        seen.update(body)
        ex = sum(number(rows[i].get("Instructions Executed")) for i in body)
        sa = sum(number(rows[i].get("Warp Stall Sampling (All Samples)")) for i in body)
        trips = max(number(rows[i].get("Instructions Executed")) for i in body)
        ops = collections.Counter(opcode(rows[i]["Source"]) for i in body)
        why = collections.Counter()
        for i in body:
            for s in STALLS:
                why[s[6:]] += number(rows[i].get(s))
        print(f"  loop {rows[start]['Address']}..{rows[end]['Address']}: {end - start + 1} instructions, executed "
              f"{ex:,.0f} ({ex / max(executed, 1):.1%}), samples {sa / max(samples, 1):.1%} "
              f"({', '.join(f'{k} {v / max(sa, 1):.0%}' for k, v in why.most_common(5))}); "
              f"most-run instruction {trips:,.0f} times; " + ", ".join(f"{k} {v}" for k, v in ops.most_common(12)))
    outside = [i for i in range(len(rows)) if i not in seen]
    ex = sum(number(rows[i].get("Instructions Executed")) for i in outside)
    sa = sum(number(rows[i].get("Warp Stall Sampling (All Samples)")) for i in outside)
    print(f"  outside loops: {len(outside)} instructions, executed {ex:,.0f} ({ex / max(executed, 1):.1%}), "
          f"samples {sa / max(samples, 1):.1%}")
    hot = sorted(range(len(rows)), key=lambda i: -number(rows[i].get("Warp Stall Sampling (All Samples)")))[:top]
    for i in hot:
        r = rows[i]
        why = sorted(((number(r.get(s)), s[6:]) for s in STALLS), reverse=True)[:3]
        print(f"    {r['Address']} {number(r.get('Warp Stall Sampling (All Samples)')) / max(samples, 1):5.1%} "
              f"{r['Source'].strip()[:70]:70} {', '.join(f'{n} {v:.0f}' for v, n in why if v)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("labels", nargs="?", default="")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    labels = args.labels.split(",") if args.labels else []
    for i, (name, rows) in enumerate(kernels(args.csv)):
        print(f"== {labels[i] if i < len(labels) else ''} {name}")
        summarise(rows, args.top)


if __name__ == "__main__":
    main()
