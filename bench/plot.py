#!/usr/bin/env python3
"""Plots of the performance lab: reads bench/results/lab.json, writes PNGs to
bench/results/plots/. Needs matplotlib (`make bench-plots` installs it)."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "lab.json")
OUT = os.path.join(os.path.dirname(RESULTS), "plots")


def ok(m):
    return m.get("error") is None


def get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def by_label(ms):
    out = {}
    for m in ms:
        out.setdefault(m["label"], []).append(m)
    return out


def save(fig, name):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote", path)


def e1(ms):
    rows = [m for m in ms if m["experiment"] == "e1" and ok(m)]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, group in by_label(rows).items():
        group.sort(key=lambda m: m["load"]["size"])
        xs = [m["load"]["size"] for m in group]
        ys = [get(m, "source", "rtt", "median_us") for m in group]
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("message data size (bytes)")
    ax.set_ylabel("median round trip (µs)")
    ax.set_title("E1: echo round trip vs size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, "e1-rtt-vs-size.png")


def e3(ms):
    rows = [m for m in ms if m["experiment"] == "e3" and ok(m)]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, group in by_label(rows).items():
        group.sort(key=lambda m: m["load"]["size"])
        ax.plot([m["load"]["size"] for m in group],
                [get(m, "source", "rtt", "median_us") for m in group], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("LaserScan ranges")
    ax.set_ylabel("median round trip (µs)")
    ax.set_title("E3: sealed vs clear text")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, "e3-encryption.png")


def e4(ms):
    rows = [m for m in ms if m["experiment"] == "e4" and ok(m) and m.get("sink")]
    if not rows:
        return
    for kind, name in (("compressed_image", "e4-rate-4k.png"), ("image", "e4-rate-308k.png")):
        sel = [m for m in rows if m["load"]["kind"] == kind]
        if not sel:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, group in by_label(sel).items():
            group.sort(key=lambda m: m["load"]["rate"])
            ax.plot([m["load"]["rate"] for m in group],
                    [get(m, "sink", "one_way", "median_us") for m in group], marker="o", label=label + " median")
            ax.plot([m["load"]["rate"] for m in group],
                    [get(m, "sink", "one_way", "p99_us") for m in group], linestyle="--", alpha=0.6, label=label + " p99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("publish rate (Hz)")
        ax.set_ylabel("one-way latency (µs)")
        ax.set_title("E4: latency vs rate, " + ("4 KiB" if kind == "compressed_image" else "307 KB image"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, name)


def e7(ms):
    rows = [m for m in ms if m["experiment"] == "e1" and ok(m) and m["load"]["size"] == 8192]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in rows:
        ecdf = get(m, "source", "rtt", "ecdf") or []
        ax.plot([p[0] for p in ecdf], [p[1] for p in ecdf], label=m["label"])
    ax.set_xscale("log")
    ax.set_xlabel("round trip (µs)")
    ax.set_ylabel("fraction of messages")
    ax.set_title("E7: ECDF of 8 KiB round trips")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, "e7-ecdf-8k.png")


def e6(ms):
    rows = [m for m in ms if m["experiment"] == "e6" and ok(m)]
    for kind, title, name in (
        ("compressed_image", "1 KiB images", "e6-wan-ecdf.png"),
        ("point_cloud2", "1.08 MB point clouds", "e6-wan-ecdf-pointcloud.png"),
    ):
        these = [m for m in rows if m["load"]["kind"] == kind]
        if not these:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        # One colour per system, one line style per path: 15 curves stay readable.
        systems = list(dict.fromkeys(m["label"] for m in these))
        paths = list(dict.fromkeys(m["wan"]["label"] for m in these))
        styles = ["-", "--", ":", "-."]
        for m in these:
            ecdf = get(m, "source", "rtt", "ecdf") or []
            ax.plot(
                [p[0] / 1000 for p in ecdf],
                [p[1] for p in ecdf],
                color=f"C{systems.index(m['label']) % 10}",
                linestyle=styles[paths.index(m["wan"]["label"]) % len(styles)],
                label=f'{m["label"]} [{m["wan"]["label"]}]',
            )
        if kind == "point_cloud2":
            ax.set_xscale("log")  # from tens of ms to seconds stalled behind losses
        ax.set_xlabel("round trip (ms)")
        ax.set_ylabel("fraction of messages")
        ax.set_title(f"E6: ECDF of round trips over emulated wide-area paths, {title}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, name)


def mqtt():
    """Seed 003's Fig. 4: the ECDF of round trips through the MQTT bridges."""
    path = os.path.join(os.path.dirname(RESULTS), "mqtt.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        runs = json.load(f)["runs"]
    for message, name in (
        ("1.08 MB point cloud", "mqtt-rtt-ecdf.png"),
        ("0.18 MB scan", "mqtt-rtt-ecdf-scan.png"),
    ):
        these = [r for r in runs if r["spec"]["message"] == message and r["rtt_us"]]
        if not these:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        systems = list(dict.fromkeys(r["spec"]["system"] for r in these))
        styles = ["-", "--", ":", "-."]
        for r in these:
            v = r["rtt_us"]
            sp = r["spec"]
            variant = f'QoS {sp["qos"]}' + (", TLS" if sp["tls"] else "")
            variants = list(dict.fromkeys(
                f'QoS {x["spec"]["qos"]}' + (", TLS" if x["spec"]["tls"] else "") for x in these))
            ax.plot(
                [x / 1000 for x in v],
                [(i + 1) / len(v) for i in range(len(v))],
                color=f"C{systems.index(sp['system']) % 10}",
                linestyle=styles[variants.index(variant) % len(styles)],
                label=f'{"roam mqtt" if sp["system"] == "Roam" else "Python bridge"} [{variant}]',
            )
        ax.set_xscale("log")
        ax.set_xlabel("round trip (ms)")
        ax.set_ylabel("fraction of messages")
        ax.set_title(f"MQTT bridges, seed 003's ping-pong: ECDF of round trips, {message}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, name)


def main():
    with open(RESULTS) as f:
        report = json.load(f)
    ms = report["measurements"]
    for plot in (e1, e3, e4, e6, e7):
        plot(ms)
    mqtt()


if __name__ == "__main__":
    main()
