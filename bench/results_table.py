#!/usr/bin/env python3
"""Turns the JSON of pjrt_lite_bench (run with --benchmark_repetitions) into the results
section of bench/RESULTS.md: a table of medians, the pjrt_lite / eigen ratio of each workload,
and each target of the performance issue checked against the figures.

Usage: results_table.py RESULTS_JSON RESULTS_MD COMMAND LOAD
Rewrites only the text between the two markers below in RESULTS_MD, so other sections of the
file stay as they are.
"""
import json
import subprocess
import sys

BEGIN = "<!-- bench/run.sh: begin (generated; edit bench/results_table.py instead) -->"
END = "<!-- bench/run.sh: end -->"

# The workloads in the order of the issue, with what each measures.
WORKLOADS = [
    ("tiny_mul_add_4", "y = x * 2 + 1 on 4 f32, inline client: per-call overhead"),
    ("jit_call_tiny", "cache-hit call of a jitted tiny function"),
    ("axpy_16M", "a * b + c on 16M f32 (memory bound)"),
    ("copy_16M", "plain copy of 16M f32 (the bandwidth roofline)"),
    ("chain_16M", "tanh(a * b + exp(-a)) * 0.5 + b on 16M f32"),
    ("gemm_256", "f32 256x256 matmul"),
    ("gemm_1024", "f32 1024x1024 matmul"),
    ("mlp_b1", "64-256-256-8 tanh MLP, batch 1"),
    ("mlp_b256", "the same MLP, batch 256"),
    ("mlp_grad_b256", "gradient of a squared loss of the MLP w.r.t. all weights"),
    ("compile_1000", "compiling a 1000-op element-wise graph"),
    ("roundtrip_4", "buffer_from_host_buffer + to_literal of 4 f32"),
]

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def medians(doc):
    """{benchmark name: median entry}, falling back to the single run without repetitions."""
    out = {}
    for b in doc["benchmarks"]:
        name = b["run_name"] if "run_name" in b else b["name"]
        name = name.removesuffix("/real_time").removesuffix("/process_time")
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                out[name] = b
        elif name not in out:
            out[name] = b
    for b in out.values():
        b["ns"] = b["real_time"] * UNIT_NS[b.get("time_unit", "ns")]
        b["cpu_ns"] = b["cpu_time"] * UNIT_NS[b.get("time_unit", "ns")]
    return out


def targets(m):
    """(target, status) rows; status says met, or by how much it misses."""
    rows = []

    def get(name):
        return m.get(name)

    def time_ratio(workload):
        p, e = get(f"{workload}/pjrt_lite"), get(f"{workload}/eigen")
        return None if p is None or e is None else p["ns"] / e["ns"]

    def at_most(label, value, limit, unit="", cpu=None):
        also = f"; process CPU time {cpu:.3g}{unit}" if cpu is not None else ""
        if value is None:
            rows.append((label, "not measured (workload absent)"))
        elif value <= limit:
            rows.append((label, f"met: {value:.3g}{unit} (limit {limit:.3g}{unit}){also}"))
        else:
            rows.append((label, f"missed: {value:.3g}{unit}, {value / limit:.2f}x the limit {limit:.3g}{unit}{also}"))

    for w in ("tiny_mul_add_4", "jit_call_tiny"):
        p = get(f"{w}/pjrt_lite")
        at_most(f"{w}: per call under 200 ns", p["ns"] if p else None, 200, " ns", p["cpu_ns"] if p else None)
    axpy, copies = get("axpy_16M/pjrt_lite"), [get("copy_16M/pjrt_lite"), get("copy_16M/eigen")]
    copies = [c for c in copies if c]
    if axpy and copies:
        best = max(c["bytes_per_second"] for c in copies)
        frac = axpy["bytes_per_second"] / best
        status = "met" if frac >= 0.85 else "missed"
        rows.append(("axpy_16M: at least 0.85 of copy_16M's bytes/s (the faster copy)",
                     f"{status}: {frac:.2f} ({axpy['bytes_per_second'] / 1e9:.1f} vs {best / 1e9:.1f} GB/s)"))
    at_most("axpy_16M: no slower than the Eigen twin (time ratio <= 1)", time_ratio("axpy_16M"), 1.0)
    at_most("chain_16M: at least 0.9 of the twin's throughput (time ratio <= 1.11)", time_ratio("chain_16M"), 1 / 0.9)
    at_most("gemm_1024: at least 0.9 of the twin (time ratio <= 1.11)", time_ratio("gemm_1024"), 1 / 0.9)
    at_most("mlp_b1: at most 1.3x the twin's time", time_ratio("mlp_b1"), 1.3)
    at_most("mlp_b256: at most 1.1x the twin's time", time_ratio("mlp_b256"), 1.1)
    grad, fwd = get("mlp_grad_b256/pjrt_lite"), get("mlp_b256/pjrt_lite")
    at_most("mlp_grad_b256: at most 3x the forward mlp_b256", grad["ns"] / fwd["ns"] if grad and fwd else None, 3.0)
    c = get("compile_1000/pjrt_lite")
    at_most("compile_1000: under 5 ms", c["ns"] / 1e6 if c else None, 5.0, " ms", c["cpu_ns"] / 1e6 if c else None)
    return rows


def machine():
    model, cores = "unknown", "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model name":
                model = value.strip()
            elif key.strip() == "CPU(s)":
                cores = value.strip()
    except OSError:
        pass
    return model, cores


def section(doc, command, load):
    m = medians(doc)
    reps = max((b.get("repetitions", 1) for b in m.values()), default=1)
    model, cores = machine()
    lines = [
        BEGIN,
        "## Results",
        "",
        f"Machine: {model}, {cores} CPUs (lscpu), shared with other work; "
        f"`uptime` load average at the start of the run: {load}.",
        f"Date: {doc['context'].get('date', '?')}. Medians of {reps} repetitions (real time).",
        "",
        f"Command: `{command}`",
        "",
        "Times are wall-clock medians; the ratio is pjrt_lite's time over the twin's (below 1: "
        "pjrt_lite is faster). The last column is the same ratio of process CPU time (all threads), "
        "which the machine's load disturbs less.",
        "",
        "| workload | what | pjrt_lite | eigen twin | pjrt_lite / eigen | CPU-time ratio |",
        "|---|---|---|---|---|---|",
    ]
    for w, what in WORKLOADS:
        p, e = m.get(f"{w}/pjrt_lite"), m.get(f"{w}/eigen")
        if p is None and e is None:
            lines.append(f"| {w} | {what} | not in this run | | | |")
            continue
        pt = fmt_time(p["ns"]) if p else "-"
        et = fmt_time(e["ns"]) if e else "no twin"
        if w == "compile_1000" and p and "ops" in p:
            pt += f" ({p['ops'] / 1e3:.0f}k ops/s)"
        for b in (p, e):
            if b and "bytes_per_second" in b:
                cell = f" ({b['bytes_per_second'] / 1e9:.1f} GB/s)"
                if b is p:
                    pt += cell
                else:
                    et += cell
        ratio = f"{p['ns'] / e['ns']:.2f}" if p and e else "-"
        cpu_ratio = f"{p['cpu_ns'] / e['cpu_ns']:.2f}" if p and e and e["cpu_ns"] > 0 else "-"
        lines.append(f"| {w} | {what} | {pt} | {et} | {ratio} | {cpu_ratio} |")
    lines += ["", "### Targets", "", "| target | status |", "|---|---|"]
    lines += [f"| {t} | {s} |" for t, s in targets(m)]
    lines.append(END)
    return "\n".join(lines) + "\n"


def main():
    json_path, md_path, command, load = sys.argv[1:5]
    with open(json_path) as f:
        doc = json.load(f)
    new = section(doc, command, load)
    try:
        with open(md_path) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Benchmark results\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + new.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + new
    with open(md_path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
