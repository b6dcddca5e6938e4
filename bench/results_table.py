#!/usr/bin/env python3
"""Turns the JSON of pjrt_lite_bench (run with --benchmark_repetitions) into the results
section of bench/RESULTS.md: a table of medians, the pjrt_lite / eigen-twin and
pjrt_lite / libtorch ratios of each workload, and each target of the performance issue checked
against the figures.

Usage: results_table.py RESULTS_JSON RESULTS_MD COMMAND LOAD
Rewrites only the text between the two markers below in RESULTS_MD, so other sections of the
file stay as they are.
"""
import json
import subprocess
import sys

BEGIN = "<!-- bench/run.sh: begin (generated; edit bench/results_table.py instead) -->"
END = "<!-- bench/run.sh: end -->"

# The workloads in the order of the issue, with what each measures. Workloads in KERNEL_ONLY
# have a twin that runs only the arithmetic: no hand-written code does what the measured call
# does (per-call dispatch), so their pjrt_lite / twin ratio is not printed.
KERNEL_ONLY = {"tiny_mul_add_4", "jit_call_tiny"}
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
    ("layer_norm_256x1024", "layer norm over the rows of f32[256, 1024], with scale and shift"),
    ("softmax_256x1024", "softmax over the rows of f32[256, 1024]"),
    ("conv3x3_56x56x64", "3x3 convolution 64 -> 64 channels, 56x56 NHWC, SAME, bias + relu, batch 1"),
    ("conv3x3_b8_56x56x64", "the same 3x3 convolution, batch 8"),
    ("conv1x1_56x56x64", "1x1 convolution 64 -> 64 channels, 56x56 NHWC, bias + relu"),
    ("depthwise3x3_56x56x64", "depthwise 3x3 convolution, 64 channels, 56x56 NHWC, SAME, bias + relu"),
    ("gemm_same_flops", "[3136, 576] x [576, 64] f32: the 3x3 convolution's FLOPs as one GEMM"),
    ("attention_128x256", "self-attention, 128 tokens, width 256, 4 heads: projections, softmax, output"),
    ("rms_norm_256x1024", "RMS norm over the rows of f32[256, 1024], with scale (from StableHLO text)"),
    ("attention_512x256", "self-attention, 512 tokens, width 256, 4 heads"),
    ("resnet_block_56x56x64", "ResNet basic block, 56x56x64 NHWC, batch 1: conv, batch norm (not folded), relu, "
     "conv, batch norm, + input, relu"),
    ("lstm_cell_b32_h512", "one LSTM cell step, batch 32, input and hidden 512"),
    ("transformer_encoder_128x256", "post-norm transformer encoder layer, 128 tokens, width 256, 4 heads, "
     "FFN 1024 with tanh-gelu"),
]

# The sweeps (bench/sweeps.cpp): `sweep_<op>_<size>/<variant>`, pjrt_lite on the inline and on
# the pooled client in the default execution mode, alone and beside one busy competitor thread.
SWEEP_OPS = [("mul", "x * y of two f32[n / 1024, 1024]"), ("sum", "sum over the last dimension of f32[n / 1024, 1024]")]
SWEEP_SIZES = ["4K", "64K", "256K", "1M"]

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


def time_ratio_of(m, workload, a, b):
    """`<workload>/<a>` over `<workload>/<b>` in median time, or None when either is absent."""
    x, y = m.get(f"{workload}/{a}"), m.get(f"{workload}/{b}")
    return None if x is None or y is None or y["ns"] <= 0 else x["ns"] / y["ns"]


def targets(m):
    """(target, status) rows; status says met, or by how much it misses."""
    rows = []

    def get(name):
        return m.get(name)

    def time_ratio(workload, peer="eigen"):
        p, e = get(f"{workload}/pjrt_lite"), get(f"{workload}/{peer}")
        return None if p is None or e is None else p["ns"] / e["ns"]

    def at_most(label, value, limit, unit="", cpu=None, torch=None):
        also = f"; process CPU time {cpu:.3g}{unit}" if cpu is not None else ""
        if torch is not None:
            also += f"; pjrt_lite / libtorch time {torch:.3g}"
        if value is None:
            rows.append((label, "not measured (workload absent)"))
        elif value <= limit:
            rows.append((label, f"met: {value:.3g}{unit} (limit {limit:.3g}{unit}){also}"))
        else:
            rows.append((label, f"missed: {value:.3g}{unit}, {value / limit:.2f}x the limit {limit:.3g}{unit}{also}"))

    def twin_target(label, workload, limit):
        at_most(label, time_ratio(workload), limit, torch=time_ratio(workload, "libtorch"))

    for w in ("tiny_mul_add_4", "jit_call_tiny"):
        p = get(f"{w}/pjrt_lite")
        at_most(f"{w}: per call under 200 ns", p["ns"] if p else None, 200, " ns", p["cpu_ns"] if p else None,
                torch=time_ratio(w, "libtorch"))
    axpy, copies = get("axpy_16M/pjrt_lite"), [get("copy_16M/pjrt_lite"), get("copy_16M/eigen")]
    copies = [c for c in copies if c]
    if axpy and copies:
        best = max(c["bytes_per_second"] for c in copies)
        frac = axpy["bytes_per_second"] / best
        status = "met" if frac >= 0.85 else "missed"
        rows.append(("axpy_16M: at least 0.85 of copy_16M's bytes/s (the faster copy)",
                     f"{status}: {frac:.2f} ({axpy['bytes_per_second'] / 1e9:.1f} vs {best / 1e9:.1f} GB/s)"))
    twin_target("axpy_16M: no slower than the Eigen twin (time ratio <= 1)", "axpy_16M", 1.0)
    twin_target("chain_16M: at least 0.9 of the twin's throughput (time ratio <= 1.11)", "chain_16M", 1 / 0.9)
    twin_target("gemm_1024: at least 0.9 of the twin (time ratio <= 1.11)", "gemm_1024", 1 / 0.9)
    twin_target("mlp_b1: at most 1.3x the twin's time", "mlp_b1", 1.3)
    twin_target("mlp_b256: at most 1.1x the twin's time", "mlp_b256", 1.1)
    grad, fwd = get("mlp_grad_b256/pjrt_lite"), get("mlp_b256/pjrt_lite")
    at_most("mlp_grad_b256: at most 3x the forward mlp_b256", grad["ns"] / fwd["ns"] if grad and fwd else None, 3.0,
            torch=time_ratio("mlp_grad_b256", "libtorch"))
    sweep_ratios = [(f"sweep_{op}_{size}", time_ratio_of(m, f"sweep_{op}_{size}", "pjrt_lite_pooled", "pjrt_lite_inline"))
                    for op, _ in SWEEP_OPS for size in SWEEP_SIZES]
    sweep_ratios = [(w, r) for w, r in sweep_ratios if r is not None]
    if sweep_ratios:
        worst_w, worst = max(sweep_ratios, key=lambda wr: wr[1])
        status = "met" if worst <= 1 / 0.95 else "missed"
        rows.append(("sweeps: the pooled client at least 0.95x the inline client's speed at every size "
                     "(pooled / inline time <= 1.05)", f"{status}: worst {worst:.2f} ({worst_w})"))
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


def cell(b, ops=False):
    """A benchmark's median time, with its bytes/s or ops/s when it reports them."""
    if b is None:
        return "-"
    text = fmt_time(b["ns"])
    if ops and "ops" in b:
        text += f" ({b['ops'] / 1e3:.0f}k ops/s)"
    if "bytes_per_second" in b:
        text += f" ({b['bytes_per_second'] / 1e9:.1f} GB/s)"
    return text


def ratio(p, e, key="ns"):
    return f"{p[key] / e[key]:.2f}" if p and e and e[key] > 0 else "-"


def sweep_section(m):
    """The inline vs pooled sweep: medians and the pooled / inline time ratio per size (above 1:
    the thread pool makes the call slower), quiet and with one busy competitor thread."""
    if not any(k.startswith("sweep_") for k in m):
        return []
    lines = [
        "",
        "### Inline vs pooled client (sweeps, default execution mode)",
        "",
        "Each call executes in the default mode (`ExecuteOptions{}`) and awaits its output. "
        "*pooled / inline* is the pooled client's time over the inline client's: above 1 the "
        "pool makes the call slower than not using it (target: at most 1/0.95 = 1.05); *pooled, "
        "synchronous* is the pooled client with `ExecutionMode::kSynchronous`, which the default "
        "mode should match now that an awaiting caller runs the work itself. The "
        "*busy* columns run the same beside one thread spinning for the whole measurement (a "
        "competitor keeping a core busy). *eigen* is the arithmetic alone on one thread; "
        "*libtorch* the ATen op on as many threads as the pooled client.",
        "",
        "| sweep | inline | pooled | pooled / inline | pooled, synchronous | inline, busy | pooled, busy "
        "| pooled busy / inline busy | pooled busy / inline | eigen (1 thread) | libtorch |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for op, what in SWEEP_OPS:
        for size in SWEEP_SIZES:
            w = f"sweep_{op}_{size}"
            get = lambda v: m.get(f"{w}/{v}")
            i, p, ib, pb = get("pjrt_lite_inline"), get("pjrt_lite_pooled"), get("pjrt_lite_inline_busy"), get(
                "pjrt_lite_pooled_busy")
            if not any((i, p, ib, pb)):
                continue
            lines.append(f"| {w} | {cell(i)} | {cell(p)} | {ratio(p, i)} | {cell(get('pjrt_lite_pooled_sync'))} "
                         f"| {cell(ib)} | {cell(pb)} | {ratio(pb, ib)} "
                         f"| {ratio(pb, i)} | {cell(get('eigen'))} | {cell(get('libtorch'))} |")
    lines.append("")
    lines.append("Sweeps: " + "; ".join(f"`sweep_{op}_<n>`: {what}" for op, what in SWEEP_OPS) + ".")
    return lines


def section(doc, command, load):
    m = medians(doc)
    reps = max((b.get("repetitions", 1) for b in m.values()), default=1)
    model, cores = machine()
    torch = doc["context"].get("libtorch")
    lines = [
        BEGIN,
        "## Results",
        "",
        f"Machine: {model}, {cores} CPUs (lscpu), shared with other work; "
        f"`uptime` load average at the start of the run: {load}.",
        f"Date: {doc['context'].get('date', '?')}. Medians of {reps} repetitions (real time).",
        f"LibTorch peer: {torch}." if torch else "LibTorch peer: not built in this run.",
        "",
        f"Command: `{command}`",
        "",
        "Times are wall-clock medians; a ratio is pjrt_lite's time over the other's (below 1: "
        "pjrt_lite is faster). The CPU-time ratio is pjrt_lite / twin in process CPU time (all "
        "threads), which the machine's load disturbs less. A twin marked *kernel only* runs the "
        "arithmetic without any per-call work: no hand-written code does what that workload "
        "measures, so it has no ratio; LibTorch is its peer.",
        "",
        "| workload | what | pjrt_lite | eigen twin | pjrt_lite / twin | CPU-time ratio "
        "| libtorch | pjrt_lite / libtorch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for w, what in WORKLOADS:
        p, e, t = m.get(f"{w}/pjrt_lite"), m.get(f"{w}/eigen"), m.get(f"{w}/libtorch")
        if p is None and e is None and t is None:
            lines.append(f"| {w} | {what} | not in this run | | | | | |")
            continue
        et = cell(e) if e else "no twin"
        r, cr = ratio(p, e), ratio(p, e, "cpu_ns")
        if w in KERNEL_ONLY and e:
            et += " (kernel only)"
            r, cr = "n/a", "n/a"
        tt = cell(t) if t else "no peer"
        lines.append(f"| {w} | {what} | {cell(p, ops=True)} | {et} | {r} | {cr} | {tt} | {ratio(p, t)} |")
    lines += sweep_section(m)
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
