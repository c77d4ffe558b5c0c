"""The CTR job's curve: training loss and held-out AUC over time, as CSV and
a gnuplot PNG with the teacher's AUC as the reference line."""

import os
import subprocess
import time

__all__ = ["write_curve", "report"]


def write_curve(out_dir, points, teacher_auc=None, title="CTR job"):
    """Writes ``<out_dir>/ctr_<local time>.csv`` (time_s,step,loss,auc;
    empty cells where a point has no value) and, when gnuplot runs, the
    ``.png`` next to it. ``points`` are dicts with time_s, step and loss
    and/or auc. Returns (csv path, png path or None)."""
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, time.strftime("ctr_%Y%m%d_%H%M%S"))
    with open(stem + ".csv", "w") as f:
        f.write("time_s,step,loss,auc\n")
        for p in points:
            loss = f"{p['loss']:.6f}" if "loss" in p else ""
            auc = f"{p['auc']:.4f}" if "auc" in p else ""
            f.write(f"{p['time_s']:.3f},{p['step']},{loss},{auc}\n")
    script = _gnuplot_script(points, teacher_auc, stem + ".png", title)
    try:
        done = subprocess.run(["gnuplot"], input=script, text=True,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return stem + ".csv", None
    return stem + ".csv", stem + ".png" if done.returncode == 0 else None


def _block(name, rows):
    return f"{name} << EOD\n" + "".join(f"{a:.3f} {b:.6f}\n"
                                        for a, b in rows) + "EOD\n"


def _gnuplot_script(points, teacher_auc, png, title):
    loss = [(p["time_s"], p["loss"]) for p in points if "loss" in p]
    auc = [(p["time_s"], p["auc"]) for p in points if "auc" in p]
    plots = []
    if loss:
        plots.append("$loss using 1:2 with lines lw 2 title "
                     "\"training loss, worker 0\"")
    if auc:
        plots.append("$auc using 1:2 axes x1y2 with linespoints lw 2 pt 7 "
                     "ps 0.6 title \"held-out AUC\"")
    if teacher_auc is not None:
        plots.append(f"{teacher_auc:.6f} axes x1y2 with lines dt 2 lw 2 "
                     f"title \"teacher AUC {teacher_auc:.4f} (best "
                     "achievable)\"")
    safe = title.replace('"', "'")
    return (_block("$loss", loss) + _block("$auc", auc) +
            "set terminal pngcairo size 1000,560\n"
            f"set output \"{png}\"\nset title \"{safe}\"\n"
            "set xlabel \"training time (s, worker 0)\"\n"
            "set ylabel \"training loss (binary cross-entropy)\"\n"
            "set y2label \"AUC\"\nset ytics nomirror\nset y2tics\n"
            "set grid\nset key below\n"
            "plot " + ", \\\n     ".join(plots or ["0 notitle"]) + "\n")


def report(out_dir, points, meta, title):
    """write_curve, with the teacher's AUC when ``meta`` (a data set's
    meta.json) has one, and a line naming the files."""
    csv, png = write_curve(out_dir, points, meta.get("teacher_auc"), title)
    print(f"curve: {csv}" + (f", plot: {png}" if png else
                             " (no plot: gnuplot failed or is missing)"),
          flush=True)
