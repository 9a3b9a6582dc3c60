"""Figures' PNGs are stored in 128 colours (the between-seed scatter in 32): the same pixels'
size as matplotlib's own PNG, a palette image, and every pixel within a small distance of the
full-colour render."""

import io

import numpy as np
from PIL import Image

from topotrain.report.figure_kit import DPI, palette_png, plt, save_figure


def line_figure():
    fig, ax = plt.subplots(figsize=(4, 3))
    rng = np.random.default_rng(0)
    for i in range(5):
        ax.plot(np.cumsum(rng.standard_normal(100)), label=f"seed {i}")
    ax.legend()
    return fig


def test_a_png_is_a_palette_image_of_the_full_colour_render():
    fig = line_figure()
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=DPI, bbox_inches="tight")
    full = np.asarray(Image.open(io.BytesIO(raw.getvalue())).convert("RGB"), dtype=float)
    small = palette_png(fig)
    image = Image.open(io.BytesIO(small))
    assert image.mode == "P" and len(image.getcolors(maxcolors=257)) <= 128
    pixels = np.asarray(image.convert("RGB"), dtype=float)
    assert pixels.shape == full.shape
    assert np.abs(pixels - full).max(axis=2).mean() < 4  # antialiased edges shift a little
    assert len(small) < len(raw.getvalue())


def test_save_figure_writes_the_palette_png_and_a_pdf(tmp_path):
    fig = save_figure(line_figure(), tmp_path / "f.png", tmp_path / "f.pdf")
    assert Image.open(tmp_path / "f.png").mode == "P"
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")
    assert (tmp_path / "f.png").read_bytes() == palette_png(fig)  # deterministic


def test_fewer_colours_are_fewer_colours_within_a_coarser_distance():
    fig = line_figure()
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=DPI, bbox_inches="tight")
    full = np.asarray(Image.open(io.BytesIO(raw.getvalue())).convert("RGB"), dtype=float)
    image = Image.open(io.BytesIO(palette_png(fig, colours=32)))
    assert len(image.getcolors(maxcolors=257)) <= 32
    pixels = np.asarray(image.convert("RGB"), dtype=float)
    assert np.abs(pixels - full).max(axis=2).mean() < 8


def test_the_model_colours_are_seaborns_viridis_palette():
    """figure_kit.cmap_colours (no seaborn import in a figure job) gives seaborn's palette."""
    import seaborn as sns

    from topotrain.report.figure_kit import cmap_colours

    for n in (2, 3, 5, 8):
        assert cmap_colours("viridis", n) == list(sns.color_palette("viridis", n_colors=n))
