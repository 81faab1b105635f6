"""Animations of closed-loop runs: car rectangle + safety ellipse + predicted horizon + corridor.

Frames are rendered headless on an Agg canvas with blitting: the static scene (corridor,
centre line, static obstacles, driven trajectory) is drawn once per view and cached; each frame
restores it and draws only the moving artists (car, ellipse, horizon, moving obstacles, text).
On large tracks the view is a window that follows the car; it re-centres when the car leaves
the middle of the window, so the cached background is reused for many frames.

GIF is written with Pillow, MP4 with ffmpeg through imageio-ffmpeg (when installed). Files are
written under a temporary name and renamed when complete.

Without a file name, :func:`animate` returns an :class:`Animation`: nothing is rendered until it
is shown or saved. As the last expression of a Jupyter cell it plays inline (``_repr_html_``):
an HTML5 ``<video>`` (H.264, a few hundred kB) when ffmpeg is available, else matplotlib's
JavaScript player (``to_jshtml``, JPEG frames) -- both embedded as data, so they survive an HTML
export of the notebook. ``.save("run.gif")`` writes a file as :func:`animate` with a name does.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.fileio import atomic_path
from mpc_tracking.viz.plotting import (
    _ellipse_params,
    _field,
    _mpc_default,
    _obstacle_geometry,
    car_outline,
    new_figure,
    plot_obstacles,
    plot_path,
    scenario_obstacles,
)

__all__ = ["animate", "Animation", "render_frames", "frame_indices", "available_formats", "FORMATS",
           "HTML_KINDS"]

logger = logging.getLogger(__name__)
#: file suffixes :func:`animate` writes
FORMATS = (".gif", ".mp4")
#: what :meth:`Animation.to_html` embeds: ``"auto"`` (video when ffmpeg is available, else the
#: JavaScript player), ``"video"`` (HTML5 video, needs ffmpeg) or ``"jshtml"`` (JavaScript player)
HTML_KINDS = ("auto", "video", "jshtml")
#: largest embedded animation [MB] (as matplotlib's ``animation.embed_limit``): frames past it are dropped
EMBED_LIMIT_MB = 20.0
_STATUS = {0: "solved", 1: "inaccurate", 2: "FALLBACK", 3: "SAFE STOP"}


def frame_indices(n_steps: int, control_period: float, *, fps: float = 20.0, speed: float = 1.0,
                  every: int | None = None) -> np.ndarray:
    """Control steps shown as frames: every ``every``-th step (default so that the video plays at
    ``speed`` x real time at ``fps``), always including the last step.

    Returns
    -------
    ndarray of int, shape (F,)
    """
    if not (np.isfinite(fps) and fps > 0):
        raise InputError(f"fps: expected a positive number, got {fps!r}")
    if not (np.isfinite(speed) and speed > 0):
        raise InputError(f"speed: expected a positive number, got {speed!r}")
    if every is None:
        every = max(1, round(speed / (fps * control_period)))
    if isinstance(every, bool) or int(every) != every or every < 1:
        raise InputError(f"every: expected an integer >= 1, got {every!r}")
    if n_steps <= 0:
        return np.zeros(0, dtype=int)
    idx = np.arange(0, n_steps, int(every))
    if idx[-1] != n_steps - 1:
        idx = np.append(idx, n_steps - 1)
    return idx


def available_formats() -> dict[str, str | None]:
    """Suffix -> None when writable, else the reason it is not (missing package)."""
    out: dict[str, str | None] = {}
    try:
        import PIL  # noqa: F401

        out[".gif"] = None
    except ImportError:
        out[".gif"] = "GIF needs Pillow (pip install pillow)"
    try:
        import imageio  # noqa: F401
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
        out[".mp4"] = None
    except Exception:
        out[".mp4"] = "MP4 needs imageio and imageio-ffmpeg (pip install imageio imageio-ffmpeg); write a .gif instead"
    return out


class _Scene:
    """The figure, the cached background and the moving artists of one animation."""

    def __init__(self, result, *, figsize, dpi, window, obstacles):
        from matplotlib.lines import Line2D
        from matplotlib.patches import Ellipse, Polygon

        self.r = result
        self.veh = result.vehicle
        if self.veh is None:
            from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams

            self.veh = VehicleParams()
        x0, x1 = np.nanmin(result.path.x), np.nanmax(result.path.x)
        y0, y1 = np.nanmin(result.path.y), np.nanmax(result.path.y)
        extent = max(x1 - x0, y1 - y0)
        if window is None:
            window = 30.0 if extent > 150.0 else 0.0
        self.window = float(window)
        margin = 0.05 * extent + self.veh.length
        pad_l, pad_r, pad_b, pad_t = 0.7 * dpi, 0.12 * dpi, 0.55 * dpi, 0.3 * dpi  # [px] for ticks, labels, title
        if figsize is None:  # 8 inch wide; a whole-path view gets the height that fits the path
            h = 6.0 * dpi
            if self.window <= 0:
                aspect = (y1 - y0 + 2 * margin) / (x1 - x0 + 2 * margin)
                h = float(np.clip((8.0 * dpi - pad_l - pad_r) * aspect + pad_b + pad_t, 3.0 * dpi, 8.0 * dpi))
            figsize = (8.0, 2 * round(h / 2) / dpi)
        self.fig = new_figure(figsize=figsize, dpi=dpi)
        self.canvas = self.fig.canvas
        W, H = figsize[0] * dpi, figsize[1] * dpi
        self.ax = self.fig.add_axes((pad_l / W, pad_b / H, 1 - (pad_l + pad_r) / W, 1 - (pad_b + pad_t) / H))
        obstacles = scenario_obstacles(result) if obstacles is None else list(obstacles)
        moving = [o for o in obstacles if _field(o, "velocity") is not None and np.any(_field(o, "velocity"))
                  and _obstacle_geometry(o, 0.0)[0] != "unknown"]  # one artist each (plot_obstacles skips unknown)
        static = [o for o in obstacles if not any(o is m for m in moving)]
        plot_path(result.path, ax=self.ax, obstacles=static)
        s = result.series
        self.ax.plot(s["x"], s["y"], color="tab:blue", lw=0.8, alpha=0.35)
        self.moving = moving
        self.moving_artists = plot_obstacles(self.ax, moving, 0.0, color="tab:purple")
        self.body = Polygon(np.zeros((4, 2)), closed=True, facecolor="tab:red", edgecolor="k", lw=0.8, zorder=6,
                            animated=True)
        self.ellipse = Ellipse((0, 0), 1, 1, fill=False, edgecolor="tab:red", ls="--", lw=1.0, zorder=6,
                               animated=True)
        self.horizon = Line2D([], [], color="tab:orange", lw=1.5, marker=".", ms=2, zorder=5, animated=True)
        self.trail = Line2D([], [], color="tab:red", lw=1.2, zorder=5, animated=True)
        self.ax.add_patch(self.body)
        self.ax.add_patch(self.ellipse)
        self.ax.add_line(self.horizon)
        self.ax.add_line(self.trail)
        for art in self.moving_artists:
            art.set_animated(True)
        self.font = _overlay_font(max(10, round(dpi * 0.16)))
        self.ax.set_title(result.path.name)
        self.ax.set_aspect("equal", adjustable="box")
        self.center: tuple[float, float] | None = None
        self.background = None
        if self.window <= 0:
            self._set_view((0.5 * (x0 + x1), 0.5 * (y0 + y1)), 0.5 * (x1 - x0) + margin, 0.5 * (y1 - y0) + margin)

    def _set_view(self, c, hx, hy) -> None:
        self.ax.set_xlim(c[0] - hx, c[0] + hx)
        self.ax.set_ylim(c[1] - hy, c[1] + hy)
        self.center = c
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.fig.bbox)

    def _follow(self, x: float, y: float) -> None:
        w = self.window
        if w <= 0:
            return
        if self.center is None or max(abs(x - self.center[0]), abs(y - self.center[1])) > 0.45 * w:
            # re-centre ahead of the car so it drives into the window
            yaw = float(self.r.series["yaw"][self._k])
            c = (x + 0.3 * w * np.cos(yaw), y + 0.3 * w * np.sin(yaw))
            self._set_view(c, w, w * self._aspect())

    def _aspect(self) -> float:
        bb = self.ax.get_position(original=True)
        fw, fh = self.fig.get_size_inches()
        return (bb.height * fh) / (bb.width * fw)

    def frame(self, k: int) -> np.ndarray:
        """RGB PIL image of control step ``k``."""
        s = self.r.series
        self._k = k
        x, y, yaw = float(s["x"][k]), float(s["y"][k]), float(s["yaw"][k])
        self._follow(x, y)
        self.canvas.restore_region(self.background)
        self.body.set_xy(car_outline(x, y, yaw, self.veh))
        centre, w, h, ang = _ellipse_params(x, y, yaw, self.veh)
        self.ellipse.set_center(centre)
        self.ellipse.width, self.ellipse.height, self.ellipse.angle = w, h, ang
        if self.r.horizon_xy.shape[0] > k:
            hz = self.r.horizon_xy[k]
            self.horizon.set_data(hz[:, 0], hz[:, 1])
        k0 = max(0, k - 200)
        self.trail.set_data(s["x"][k0:k + 1], s["y"][k0:k + 1])
        t = float(s["t"][k])
        for art, ob in zip(self.moving_artists, self.moving, strict=True):
            _move(art, ob, t)
        status = _STATUS.get(int(s["status"][k]), "?")
        for art in (*self.moving_artists, self.trail, self.horizon, self.ellipse, self.body):
            self.ax.draw_artist(art)
        text = f"t = {t:6.2f} s\nv = {s['v'][k]:5.2f} m/s\ne_y = {s['e_y'][k]:+.2f} m\n{status}"
        return _overlay_text(self.canvas, text, self.font, self._text_xy())

    def _text_xy(self) -> tuple[int, int]:
        bb = self.ax.get_window_extent()
        h = self.fig.bbox.height
        return int(bb.x0) + 6, int(h - bb.y1) + 6


def _overlay_font(size: int):
    """A font for the frame text (drawn with Pillow: ~100x cheaper than a matplotlib Text per frame)."""
    from PIL import ImageFont

    try:
        from matplotlib import font_manager

        return ImageFont.truetype(font_manager.findfont("DejaVu Sans Mono"), size)
    except Exception:  # pragma: no cover - font lookup failed: Pillow's built-in bitmap font
        return ImageFont.load_default()


def _overlay_text(canvas, text: str, font, xy: tuple[int, int]):
    """The canvas as an RGB PIL image with ``text`` drawn at pixel ``xy`` (from the top left)."""
    from PIL import Image, ImageDraw

    w, h = canvas.get_width_height()
    im = Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
    draw = ImageDraw.Draw(im)
    box = draw.multiline_textbbox(xy, text, font=font)
    draw.rectangle((box[0] - 3, box[1] - 3, box[2] + 3, box[3] + 3), fill=(255, 255, 255))
    draw.multiline_text(xy, text, fill=(0, 0, 0), font=font)
    return im


def _move(artist, ob: Any, t: float) -> None:
    kind, geo = _obstacle_geometry(ob, t)
    if kind == "circle":
        artist.set_center(tuple(geo[0]))
    elif kind == "polygon":
        artist.set_xy(geo)


def render_frames(result, *, fps: float = 20.0, speed: float = 1.0, every: int | None = None, dpi: int = 80,
                  figsize: tuple[float, float] | None = None, window: float | None = None,
                  obstacles: Sequence[Any] | None = None) -> Iterator[np.ndarray]:
    """Yield the frames of a run as RGB arrays (H, W, 3) uint8.

    Parameters
    ----------
    result : SimulationResult
    fps, speed, every
        See :func:`frame_indices`.
    dpi : int
        Pixels per inch (figsize x dpi = frame size).
    figsize : (float, float), optional
        Frame size [inch]; default 8 wide, 6 high for a following view, else fitted to the path.
    window : float, optional
        Half-width [m] of a view that follows the car; 0 shows the whole path; default: follow
        (30 m) when the path is larger than 150 m.
    obstacles : sequence, optional
        Default: those of the result's scenario; ones with a ``velocity`` move.
    """
    if len(result) == 0:
        raise InputError("result: the run has no steps to animate")
    _check_view(dpi, window)
    idx = frame_indices(len(result), _control_period(result), fps=fps, speed=speed, every=every)
    for im in _images(result, idx, dpi=dpi, figsize=figsize, window=window, obstacles=obstacles):
        yield np.asarray(im)


def _check_view(dpi: Any, window: Any) -> None:
    """``dpi`` an integer in [10, 600]; ``window`` None or a finite half-width >= 0 m."""
    if isinstance(dpi, bool) or not isinstance(dpi, (int, np.integer)) or not 10 <= dpi <= 600:
        raise InputError(f"dpi: expected an integer in [10, 600], got {dpi!r}")
    if window is not None and not (isinstance(window, (int, float, np.floating, np.integer))
                                   and np.isfinite(window) and window >= 0):
        raise InputError(f"window: expected a view half-width >= 0 m (0: the whole path), got {window!r}")


def _images(result, idx: np.ndarray, **scene_kw: Any):
    scene = _Scene(result, **scene_kw)
    for k in idx:
        yield scene.frame(int(k))


def _control_period(result) -> float:
    T = (result.info or {}).get("control_period")
    if T:
        return float(T)
    t = result.series["t"]
    return float(np.median(np.diff(t))) if t.size > 1 else float(_mpc_default("control_period"))


def animate(result, out: str | Path | None = None, *, fps: float = 20.0, speed: float = 1.0,
            every: int | None = None, dpi: int = 80, figsize: tuple[float, float] | None = None,
            window: float | None = None, obstacles: Sequence[Any] | None = None,
            progress: Callable[[int, int], None] | None = None) -> Any:
    """Animate ``result``: write it to ``out`` (``.gif`` or ``.mp4``), or return an :class:`Animation`.

    Parameters
    ----------
    result : SimulationResult
    out : str or Path, optional
        Output file; the suffix chooses the format (see :func:`available_formats`). Without it
        nothing is written: the returned :class:`Animation` shows inline in Jupyter and saves
        with ``.save(file)``.
    fps, speed, every, dpi, figsize, window, obstacles
        See :func:`render_frames`.
    progress : callable, optional
        ``progress(i, n)`` after each frame (when writing a file).

    Returns
    -------
    Path or Animation
        With ``out``: the written file (complete: frames go to a temporary name that is renamed
        at the end). Without: the :class:`Animation` (rendered when shown or saved).

    Raises
    ------
    InputError
        Unknown suffix, a format whose writer is not installed, an empty run, a missing folder,
        a bad ``fps``/``speed``/``every``/``dpi``/``window``.
    """
    anim = Animation(result, fps=fps, speed=speed, every=every, dpi=dpi, figsize=figsize, window=window,
                     obstacles=obstacles)
    if out is None:
        return anim
    return anim.save(out, progress=progress)


class Animation:
    """An animation of a run, held as its settings: shown inline in Jupyter, saved to a file.

    Made by :func:`animate` (or ``result.animate()``) without a file name. Frames are rendered
    each time it is shown or saved (never all kept in memory); the inline HTML is kept once made.

    Parameters
    ----------
    result : SimulationResult
    fps, speed, every, dpi, figsize, window, obstacles
        See :func:`render_frames`.

    Examples
    --------
    >>> from mpc_tracking.scenario.core import default_scenario, run_scenario
    >>> run = run_scenario(default_scenario().with_overrides({"simulation.t_max": 1.0}))
    >>> anim = run.animate(every=10, dpi=30)
    >>> anim.n_frames
    3
    >>> anim.to_html("jshtml").count("data:image/jpeg;base64")
    3
    """

    def __init__(self, result, *, fps: float = 20.0, speed: float = 1.0, every: int | None = None,
                 dpi: int = 80, figsize: tuple[float, float] | None = None, window: float | None = None,
                 obstacles: Sequence[Any] | None = None) -> None:
        if len(result) == 0:
            raise InputError("result: the run has no steps to animate")
        _check_view(dpi, window)
        self.result = result
        self.fps = float(fps)
        self.indices = frame_indices(len(result), _control_period(result), fps=fps, speed=speed, every=every)
        self.dpi = dpi
        self._scene_kw: dict[str, Any] = dict(dpi=dpi, figsize=figsize, window=window, obstacles=obstacles)
        self._html: dict[str, str] = {}

    @property
    def n_frames(self) -> int:
        """Number of frames (control steps shown)."""
        return len(self.indices)

    @property
    def duration(self) -> float:
        """Play time [s] at :attr:`fps`."""
        return self.n_frames / self.fps

    def __repr__(self) -> str:
        name = getattr(self.result.path, "name", "") or "run"
        return (f"<Animation of {name}: {self.n_frames} frames at {self.fps:g} fps ({self.duration:.1f} s); "
                "shows inline in Jupyter, .save('run.gif'|'run.mp4') writes a file>")

    def frames(self) -> Iterator[Any]:
        """The frames as RGB PIL images, rendered one at a time."""
        return _images(self.result, self.indices, **self._scene_kw)

    def save(self, out: str | Path, *, progress: Callable[[int, int], None] | None = None) -> Path:
        """Write the animation to ``out`` (``.gif`` or ``.mp4`` by its suffix); returns the file.

        Raises
        ------
        InputError
            Unknown suffix, a format whose writer is not installed, a missing folder.
        """
        out = Path(out)
        suffix = out.suffix.lower()
        if suffix not in FORMATS:
            raise InputError(f"{out}: unknown animation format {out.suffix!r}; expected one of {', '.join(FORMATS)}")
        reason = available_formats()[suffix]
        if reason is not None:
            raise InputError(f"{out}: {reason}")
        if not out.parent.is_dir():
            raise InputError(f"{out}: folder {out.parent} does not exist")
        with atomic_path(out) as tmp:
            if suffix == ".gif":
                _write_gif(tmp, self.frames(), self.fps, self.n_frames, progress)
            else:
                _write_mp4(tmp, self.frames(), self.fps, self.n_frames, progress)
        return out

    def to_html(self, kind: str = "auto", *, embed_limit: float = EMBED_LIMIT_MB) -> str:
        """The animation as one self-contained HTML fragment (the frames embedded as data).

        Parameters
        ----------
        kind : {"auto", "video", "jshtml"}
            ``"video"``: an HTML5 ``<video>`` of an H.264 MP4 (needs imageio-ffmpeg);
            ``"jshtml"``: matplotlib's JavaScript player with JPEG frames (play, step, loop);
            ``"auto"``: video when it can be written, else the player.
        embed_limit : float
            Largest size [MB]; the player drops the frames past it (with a warning), a larger
            video is an :class:`InputError` (raise ``every`` or lower ``dpi``).

        Returns
        -------
        str
        """
        if kind not in HTML_KINDS:
            raise InputError(f"kind: expected one of {', '.join(HTML_KINDS)}, got {kind!r}")
        if not (isinstance(embed_limit, (int, float)) and embed_limit > 0):
            raise InputError(f"embed_limit: expected a size > 0 MB, got {embed_limit!r}")
        if kind == "auto":
            kind = "video" if available_formats()[".mp4"] is None else "jshtml"
        if kind not in self._html:
            self._html[kind] = self._video_html(embed_limit) if kind == "video" else self._jshtml(embed_limit)
        return self._html[kind]

    def to_jshtml(self) -> str:
        """matplotlib's JavaScript player of the frames (as ``matplotlib.animation.Animation.to_jshtml``)."""
        return self.to_html("jshtml")

    def _repr_html_(self) -> str:
        return self.to_html("auto")

    def _video_html(self, embed_limit: float) -> str:
        import base64
        import tempfile

        reason = available_formats()[".mp4"]
        if reason is not None:
            raise InputError(f"kind='video': {reason}")
        with tempfile.TemporaryDirectory() as tmp:
            data = self.save(Path(tmp) / "animation.mp4").read_bytes()
        if len(data) > embed_limit * 1024 * 1024:
            raise InputError(f"the video is {len(data) / 1e6:.1f} MB, more than embed_limit={embed_limit:g} MB; "
                             "animate with a larger every= or a lower dpi=, or .save() it to a file")
        b64 = base64.b64encode(data).decode("ascii")
        return ("<video controls autoplay loop muted playsinline style='max-width:100%'>"
                f"<source type='video/mp4' src='data:video/mp4;base64,{b64}'></video>")

    def _jshtml(self, embed_limit: float) -> str:
        return _jshtml(self.frames(), self.fps, self.dpi, embed_limit)


def _jshtml(frames: Iterator[Any], fps: float, dpi: int, embed_limit: float) -> str:
    """matplotlib's HTML player (:class:`matplotlib.animation.HTMLWriter`) fed with JPEG frames.

    The writer grabs frames from a figure; ours are already images, so their base64 text goes
    straight into the list it embeds (``_saved_frames``, as its own ``grab_frame`` does).
    """
    import base64
    import io
    import tempfile

    from matplotlib.animation import HTMLWriter

    writer = HTMLWriter(fps=max(1, round(fps)), embed_frames=True, default_mode="loop", embed_limit=embed_limit)
    writer.frame_format = "jpeg"
    with tempfile.TemporaryDirectory() as tmp:
        html_file = Path(tmp) / "animation.html"
        writer.setup(new_figure(figsize=(1, 1), dpi=dpi), html_file, dpi=dpi)
        saved: list[str] = writer._saved_frames  # type: ignore[attr-defined]
        limit, total = embed_limit * 1024 * 1024, 0
        for i, img in enumerate(frames):
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=85)
            data = base64.encodebytes(buf.getvalue()).decode("ascii")
            total += len(data)
            if total > limit:
                logger.warning("animation: %d frames fit in embed_limit=%g MB, the rest are dropped (raise every= "
                               "or lower dpi=)", i, embed_limit)
                break
            saved.append(data)
        writer.finish()
        return html_file.read_text()


def _write_gif(tmp: Path, frames: Iterator[Any], fps: float, n: int, progress) -> None:
    from PIL import Image

    images = []
    palette = None
    for i, img in enumerate(frames):
        if palette is None:
            palette = img.quantize(colors=128, method=Image.Quantize.MEDIANCUT)
        images.append(img.quantize(palette=palette, dither=Image.Dither.NONE))
        if progress is not None:
            progress(i + 1, n)
    if not images:
        raise InputError("result: the run has no steps to animate")
    duration = max(20, round(1000.0 / fps / 10.0) * 10)
    images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0,
                   disposal=1, optimize=False)


def _write_mp4(tmp: Path, frames: Iterator[Any], fps: float, n: int, progress) -> None:
    import imageio.v2 as imageio

    writer = imageio.get_writer(str(tmp), format="FFMPEG", fps=fps, codec="libx264", quality=7,
                                macro_block_size=1, pixelformat="yuv420p")
    try:
        for i, im in enumerate(frames):
            f = np.asarray(im)
            h, w = f.shape[0] // 2 * 2, f.shape[1] // 2 * 2
            writer.append_data(f[:h, :w])
            if progress is not None:
                progress(i + 1, n)
    finally:
        writer.close()
