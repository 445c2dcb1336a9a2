# SPDX-License-Identifier: GPL-2.0
"""CSV tables and matplotlib plots of the benchmarks (scripts/bench.py,
scripts/guest.py freebench), written under build/bench/."""

import csv
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTDIR = os.path.join(REPO, "build", "bench")


def write_csv(name, header, rows):
    """Write ROWS (sequences matching HEADER) to build/bench/NAME.csv."""
    os.makedirs(OUTDIR, exist_ok=True)
    path = os.path.join(OUTDIR, f"{name}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def pyplot():
    """matplotlib's pyplot without a display, or a clear error."""
    try:
        import matplotlib
    except ImportError:
        sys.stderr.write(f"bench: {sys.executable} cannot import "
                         "matplotlib: apt-get install python3-matplotlib "
                         "(make setup does) and run with /usr/bin/python3, "
                         "or pip install matplotlib for this python\n")
        sys.exit(2)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, name):
    """Save FIG as build/bench/NAME.png and return the path."""
    os.makedirs(OUTDIR, exist_ok=True)
    path = os.path.join(OUTDIR, f"{name}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path
