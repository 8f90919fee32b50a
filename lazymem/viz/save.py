"""Write figures as ``<name>.html`` (plotly.js written once beside them) and ``<name>.png`` (kaleido)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

PNG_FIX = (
    "install a Chromium for kaleido: `apt-get install -y chromium` (Debian/Ubuntu) "
    "or `python -c 'import kaleido; kaleido.get_chrome_sync()'` with internet access"
)


def save_figures(
    figures: Mapping[str, Any],
    out_dir: str | Path = "figures",
    png: bool = True,
    include_plotlyjs: bool | str = "directory",
) -> dict[str, dict[str, str | None]]:
    """Write ``<out_dir>/<name>.html`` for each figure and, in one kaleido batch, ``<name>.png``.

    HTML loads plotly.js from ``<out_dir>/plotly.min.js`` (``include_plotlyjs="directory"``,
    written once, 4.8 MB, instead of embedding it in every file), so it renders offline
    ('cdn' renders blank without internet; True embeds it per file), and uses the name as
    div id, so the same figure gives the same bytes. When kaleido or its Chromium is missing
    the PNGs are skipped with a warning that names the fix; the HTML is written regardless.

    Returns:
        ``{name: {"html": path, "png": path or None}}``.
    """
    import plotly.io as pio

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in figures:
        if not _NAME.match(name):
            raise ValueError(f"figure name {name!r}: use letters, digits, '_', '-', '.' (it becomes a file name)")
    written: dict[str, dict[str, str | None]] = {}
    for name, fig in figures.items():
        path = out / f"{name}.html"
        fig.write_html(path, include_plotlyjs=include_plotlyjs, full_html=True, div_id=name)
        written[name] = {"html": str(path), "png": None}
    if png and figures:
        paths = [out / f"{name}.png" for name in figures]
        try:
            import kaleido  # noqa: F401  (fail here with ImportError rather than deep inside plotly)

            figs = list(figures.values())
            # kaleido draws at plotly's default 700 x 500 unless told: use each figure's own layout size
            pio.write_images(
                figs,
                paths,
                width=[getattr(f.layout, "width", None) for f in figs],
                height=[getattr(f.layout, "height", None) for f in figs],
            )
        except Exception as e:  # missing kaleido/Chromium surfaces as several exception types
            warnings.warn(
                f"PNG not written for {', '.join(figures)} ({type(e).__name__}: {str(e)[:200]}); "
                f"HTML only. Fix: {PNG_FIX}",
                RuntimeWarning,
                stacklevel=2,
            )
        else:
            for name, p in zip(figures, paths):
                written[name]["png"] = str(p)
    return written


def save_figure(
    fig: Any, name: str, out_dir: str | Path = "figures", png: bool = True, include_plotlyjs: bool | str = "directory"
) -> dict[str, str | None]:
    """Write ``<out_dir>/<name>.html`` and ``<out_dir>/<name>.png``; returns ``{"html", "png"}``
    paths (png None when it could not be written). See ``save_figures``."""
    return save_figures({name: fig}, out_dir, png=png, include_plotlyjs=include_plotlyjs)[name]
