"""Animation: frame selection, frame count of the written GIF, frames change, formats, errors."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from mpc_tracking.errors import InputError
from mpc_tracking.scenario.core import default_scenario, run_scenario
from mpc_tracking.viz.animation import animate, available_formats, frame_indices, render_frames


@pytest.fixture(scope="module")
def result():
    return run_scenario(default_scenario().with_overrides({"simulation.t_max": 2.0, "controller.horizon": 12}))


@pytest.mark.parametrize(
    "n, T, fps, speed, every, expected",
    [
        (10, 0.05, 20, 1.0, None, list(range(10))),
        (10, 0.05, 10, 1.0, None, [0, 2, 4, 6, 8, 9]),
        (10, 0.05, 20, 2.0, None, [0, 2, 4, 6, 8, 9]),
        (10, 0.05, 20, 1.0, 3, [0, 3, 6, 9]),
        (1, 0.05, 20, 1.0, 4, [0]),
        (0, 0.05, 20, 1.0, None, []),
    ],
)
def test_frame_indices(n, T, fps, speed, every, expected):
    assert frame_indices(n, T, fps=fps, speed=speed, every=every).tolist() == expected


@pytest.mark.parametrize("kw, match", [({"fps": 0}, "fps"), ({"speed": -1}, "speed"), ({"every": 0}, "every")])
def test_frame_indices_bad(kw, match):
    with pytest.raises(InputError, match=match):
        frame_indices(10, 0.05, **kw)


def test_gif_has_expected_frame_count(result, tmp_path):
    out = animate(result, tmp_path / "run.gif", every=4)
    expected = len(frame_indices(len(result), 0.05, every=4))
    with Image.open(out) as im:
        assert im.n_frames == expected
        assert im.size[0] == 640 and im.size[1] % 2 == 0 and 240 <= im.size[1] < 480  # fitted to the oval
    assert not list(tmp_path.glob(".*partial*"))


def test_frames_move_and_show_the_car(result):
    frames = list(render_frames(result, every=20, dpi=40))
    assert len(frames) == len(frame_indices(len(result), 0.05, every=20))
    assert frames[0].shape[1:] == (320, 3) and frames[0].std() > 10
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).sum() > 0
    # the car body is drawn in tab:red (214, 39, 40)
    red = (np.abs(frames[0].astype(int) - [214, 39, 40]).sum(axis=-1) < 30).sum()
    assert red > 5


def test_follow_window_on_small_window(result):
    frames = list(render_frames(result, every=40, dpi=30, window=10.0))
    assert len(frames) >= 2 and all(f.std() > 5 for f in frames)


def test_mp4_is_written(result, tmp_path):
    # imageio-ffmpeg ships with the test extras; a missing writer: test_unavailable_writer_gives_the_cause
    assert available_formats()[".mp4"] is None
    out = animate(result, tmp_path / "run.mp4", every=10, dpi=40)
    assert out.stat().st_size > 1000
    assert out.read_bytes()[4:8] == b"ftyp"  # an MP4 container


def test_bad_format_and_folder(result, tmp_path):
    with pytest.raises(InputError, match=r"unknown animation format '\.avi'"):
        animate(result, tmp_path / "run.avi")
    with pytest.raises(InputError, match="does not exist"):
        animate(result, tmp_path / "missing" / "run.gif")


def test_unavailable_writer_gives_the_cause(result, tmp_path, monkeypatch):
    import mpc_tracking.viz.animation as an

    monkeypatch.setattr(an, "available_formats", lambda: {".gif": None, ".mp4": "MP4 needs imageio-ffmpeg (pip install imageio-ffmpeg)"})
    with pytest.raises(InputError, match=r"run\.mp4: MP4 needs imageio-ffmpeg"):
        an.animate(result, tmp_path / "run.mp4")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("kw, match", [(dict(dpi=0), "dpi: expected an integer in \\[10, 600\\], got 0"),
                                       (dict(dpi=12.5), "dpi"), (dict(window=-5.0), "window: expected a view half-width"),
                                       (dict(window=float("nan")), "window")])
def test_animate_rejects_bad_dpi_and_window(tmp_path, kw, match):
    import mpc_tracking as mt
    from mpc_tracking.viz.animation import animate

    path = mt.load_path("oval", ds=1.0)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10))
    res = mt.simulate(path, mpc, mt.create_model("kinematic_bicycle"), t_max=0.2)
    with pytest.raises(mt.InputError, match=match):
        animate(res, tmp_path / "a.gif", **kw)


# ---------------------------------------------------------------------- inline (notebook) animations
def _data_uris(html: str, mime: str) -> list[bytes]:
    import base64
    import re

    return [base64.b64decode(m.replace("\\\n", "")) for m in re.findall(rf"data:{mime};base64,([^\"']+)", html)]


def test_animate_without_a_file_returns_an_animation_and_writes_nothing(result, tmp_path, monkeypatch):
    from mpc_tracking.viz.animation import Animation

    monkeypatch.chdir(tmp_path)
    anim = result.animate(every=10, dpi=30)
    assert isinstance(anim, Animation)
    assert anim.n_frames == len(frame_indices(len(result), 0.05, every=10))
    assert "\n" not in repr(anim) and f"{anim.n_frames} frames" in repr(anim)
    assert not list(tmp_path.iterdir())


def test_jshtml_embeds_every_frame_as_jpeg(result):
    anim = animate(result, every=10, dpi=30)
    html = anim.to_jshtml()
    frames = _data_uris(html, "image/jpeg")
    assert len(frames) == anim.n_frames
    first = Image.open(__import__("io").BytesIO(frames[0]))
    assert first.format == "JPEG" and first.size[0] == 240  # 8 inch x 30 dpi
    assert "anim" in html and "<script" in html  # matplotlib's player


def test_video_html_embeds_an_mp4(result):
    html = animate(result, every=10, dpi=30).to_html("video")
    (video,) = _data_uris(html, "video/mp4")
    assert html.startswith("<video") and video[4:8] == b"ftyp"


def test_repr_html_is_the_player_when_no_ffmpeg(result, monkeypatch):
    import mpc_tracking.viz.animation as an

    monkeypatch.setattr(an, "available_formats", lambda: {".gif": None, ".mp4": "MP4 needs imageio-ffmpeg"})
    anim = an.animate(result, every=20, dpi=30)
    assert len(_data_uris(anim._repr_html_(), "image/jpeg")) == anim.n_frames
    with pytest.raises(InputError, match="MP4 needs imageio-ffmpeg"):
        anim.to_html("video")


def test_animation_saves_the_same_frames_as_animate_with_a_file(result, tmp_path):
    anim = animate(result, every=4)
    out = anim.save(tmp_path / "run.gif")
    with Image.open(out) as im:
        assert im.n_frames == anim.n_frames


def test_embed_limit_drops_frames_with_a_warning_or_refuses_the_video(result, caplog):
    anim = animate(result, every=5, dpi=30)
    with caplog.at_level("WARNING"):
        html = anim.to_html("jshtml", embed_limit=0.02)  # 20 kB: a frame or two
    assert 0 < len(_data_uris(html, "image/jpeg")) < anim.n_frames
    assert "embed_limit" in caplog.text
    with pytest.raises(InputError, match="embed_limit"):
        anim.to_html("video", embed_limit=1e-4)


@pytest.mark.parametrize("kw, match", [({"kind": "gif"}, "kind: expected one of auto, video, jshtml"),
                                       ({"embed_limit": 0}, "embed_limit")])
def test_to_html_bad_input(result, kw, match):
    with pytest.raises(InputError, match=match):
        animate(result, every=20, dpi=30).to_html(**kw)
