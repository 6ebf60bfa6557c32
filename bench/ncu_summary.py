#!/usr/bin/env python
"""A short table of an `ncu --csv --page details` report: per profiled kernel, the metrics that say where a
matmul's time goes (duration, throughputs, occupancy, issue rate) and its largest warp-stall reasons.

    ncu --csv --page details ... > report.csv; python bench/ncu_summary.py report.csv [label,label,...]
"""
import csv
import sys

KEEP = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput", "L2 Hit Rate",
        "Registers Per Thread", "Dynamic Shared Memory Per Block", "Achieved Occupancy", "Theoretical Occupancy",
        "Warp Cycles Per Issued Instruction", "Issue Slots Busy", "Executed Ipc Active", "Block Limit Shared Mem",
        "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum")
STALL = "smsp__average_warps_issue_stalled_"
PIPES = ("sm__pipe_tensor", "sm__inst_executed_pipe_tensor")   # tensor-core pipes, where asked for


def main():
    path = sys.argv[1]
    labels = sys.argv[2].split(",") if len(sys.argv) > 2 else []
    kernels = {}
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]       # ncu's own messages are not CSV
    for row in csv.DictReader(lines):
        k = kernels.setdefault(row["ID"], dict(name=row["Kernel Name"][:40], grid=row.get("Grid Size", ""),
                                               metrics={}, stalls={}))
        name, value, unit = row["Metric Name"], row["Metric Value"], row.get("Metric Unit", "")
        if name.startswith(STALL):
            try:
                k["stalls"][name[len(STALL):].replace("_per_issue_active.ratio", "")] = float(value.replace(",", ""))
            except ValueError:
                pass
        elif name in KEEP or name.startswith(PIPES):
            k["metrics"][name] = f"{value} {unit}".strip()
    for i, (kid, k) in enumerate(kernels.items()):
        label = labels[i] if i < len(labels) else ""
        print(f"== [{kid}] {label} {k['name']} grid {k['grid']}")
        print("   " + "; ".join(f"{n}: {k['metrics'][n]}" for n in KEEP if n in k["metrics"]))
        pipes = sorted(n for n in k["metrics"] if n.startswith(PIPES))
        if pipes:
            print("   tensor pipes: " + "; ".join(f"{n}: {k['metrics'][n]}" for n in pipes))
        top = sorted(k["stalls"].items(), key=lambda kv: -kv[1])[:7]
        print("   stalls per issue: " + ", ".join(f"{n} {v:.2f}" for n, v in top))


if __name__ == "__main__":
    main()
