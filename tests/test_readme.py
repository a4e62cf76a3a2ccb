"""The README's performance figures are the ones in the results files it cites (benchmarks/results/)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def _read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def _table():
    """The performance table's rows: (what, geometric mean, minimum), in order."""
    rows = re.findall(r"^\| (.+?) \| ([\d.]+)x \(([\d.]+)x\) \|$", _read(ROOT, "README.md"), re.M)
    assert len(rows) == 7, rows
    return rows


# Where each row's figures come from, in the table's order: the results file and its summary line (mean, minimum).
SOURCES = [
    ("bench_cpu.txt", r"geometric-mean speedup {0}x, minimum {1}x over 42 cases"),
    ("bench_resize.txt", r"forward vs PyTorch eager: geometric mean {0}x, minimum {1}x"),
    ("bench_resize.txt", r"resize_bicubic forward\+backward vs F.interpolate eager: geometric mean {0}x, minimum {1}x"),
    ("bench_resize.txt", r"under torch.compile: geometric mean {0}x, minimum {1}x"),
    ("bench_resize.txt", r"override on vs off: geometric mean {0}x, minimum {1}x"),
    ("bench_images.txt", r"input: batched\n(?:.*\n)*?geometric mean: {0}x OpenCV \(min {1}x\)"),
    ("bench_images.txt", r"input: view\n(?:.*\n)*?geometric mean: {0}x OpenCV \(min {1}x\)"),
]


def test_each_performance_figure_is_in_the_results_file_it_comes_from():
    for (what, mean, minimum), (name, pattern) in zip(_table(), SOURCES):
        text = _read(RESULTS, name)
        assert re.search(pattern.format(re.escape(mean), re.escape(minimum)), text), (what, mean, minimum, name)


def test_the_introduction_quotes_the_table():
    rows = _table()
    pytorch = [float(mean) for _, mean, _ in rows[:2]]
    opencv = sorted(mean for _, mean, _ in rows[5:])
    intro = _read(ROOT, "README.md").split("## Install")[0]
    assert f"{min(pytorch):g}–{max(pytorch):g}x faster than PyTorch's own kernels" in intro
    assert f"{opencv[0]}–{opencv[1]}x faster" in intro


def test_the_large_downscale_figures_are_the_results_files():
    readme = " ".join(_read(ROOT, "README.md").split())
    m = re.search(r"forward ([\d.]+)x PyTorch \(min ([\d.]+)x\) and ([\d.]+)x OpenCV \(min ([\d.]+)x[:)].*?gradient "
                  r"([\d.]+)x PyTorch \(min ([\d.]+)x\)", readme)
    assert m, "the README's large-downscale sentence"
    f_pt, f_pt_min, f_cv, f_cv_min, g_pt, g_pt_min = m.groups()
    summary = (f"forward: geometric mean {f_pt}x PyTorch (min {f_pt_min}x), {f_cv}x OpenCV (min {f_cv_min}x); "
               f"gradient: geometric mean {g_pt}x PyTorch (min {g_pt_min}x)")
    assert summary in _read(RESULTS, "bench_images_large.txt")


def test_the_antialiased_figures_are_the_results_files():
    readme = " ".join(_read(ROOT, "README.md").split())
    m = re.search(r"Antialiased .*?forward ([\d.]+)x \(min ([\d.]+)x\), backward ([\d.]+)x \(min ([\d.]+)x\), forward "
                  r"\+ backward ([\d.]+)x \(min ([\d.]+)x\) PyTorch eager in geometric mean, and the forward ([\d.]+)x "
                  r"Pillow \(min ([\d.]+)x\)", readme)
    assert m, "the README's antialiased sentence"
    f, f_min, b, b_min, fb, fb_min, pil, pil_min = m.groups()
    results = _read(RESULTS, "bench_antialias.txt")
    assert (f"geometric mean speedup over PyTorch eager: forward {f}x (min {f_min}x), backward {b}x (min {b_min}x), "
            f"forward + backward {fb}x (min {fb_min}x)") in results
    assert f"forward vs Pillow (float32 F planes, one thread): {pil}x (min {pil_min}x)" in results
