"""Videos: frames of each episode, written as MP4 or GIF and read back with imageio."""

import re
import subprocess
import warnings

import jax
import numpy as np
import pytest

from podracer.agents import make_agent
from podracer.envs import make
from podracer.runs.video import Recorder
from podracer.runs.video import episode_frames
from podracer.runs.video import write_video

imageio = pytest.importorskip("imageio.v2", reason="the video extra: podracer-runs[video]")
imageio_ffmpeg = pytest.importorskip(
    "imageio_ffmpeg", reason="the video extra: podracer-runs[video]"
)


def read_frames(path) -> np.ndarray:
    """Every frame of a video `[T, H, W, 3]`, decoded by the ffmpeg imageio-ffmpeg ships, run
    here to completion (imageio's readers leave their pipes open)."""
    if str(path).endswith(".gif"):
        return np.asarray(imageio.mimread(path))[..., :3]
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    with warnings.catch_warnings():  # JAX warns on any fork; this one execs ffmpeg at once
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        decode = [ffmpeg, "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24"]
        decode.append("-")
        raw = subprocess.run(decode, capture_output=True, check=True).stdout
        probe = subprocess.run([ffmpeg, "-i", str(path)], capture_output=True, text=True).stderr
    width, height = map(int, re.search(r", (\d+)x(\d+)", probe).groups())
    return np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3)


def test_episode_frames_stop_at_each_episode_end():
    spec = make("catch").spec
    observations = np.zeros((6, 2, 10, 5), np.float32)
    done = np.zeros((6, 2), bool)
    done[3, 0] = True  # env 0's episode ends at step 3; env 1's still runs after step 5
    frames = episode_frames(spec, observations, done)
    assert frames.shape[0] == 4 + 6 and frames.dtype == np.uint8 and frames.shape[-1] == 3


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_a_video_decodes_to_the_frames_written(tmp_path, suffix):
    frames = np.zeros((12, 128, 96, 3), np.uint8)
    frames[:, :, :48] = np.arange(12, dtype=np.uint8)[:, None, None, None] * 20
    path = write_video(tmp_path / "videos" / f"x{suffix}", frames)
    back = read_frames(path)
    assert back.shape == frames.shape
    assert abs(float(back[6, 64, 10, 0]) - 120) < 12  # lossy, but the picture is there
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == [f"x{suffix}"]


def test_a_recorder_films_greedy_catch_episodes(tmp_path):
    env = make("catch")
    agent = make_agent("qlambda", env.spec)
    recorder = Recorder(agent, "catch", episodes=3)
    path = recorder.record(tmp_path / "catch.mp4", agent.init(jax.random.PRNGKey(0)))
    assert read_frames(path).shape[0] == 3 * 10  # reset + 9 steps, 3 times
