"""A missing optional extra is named in one line before anything trains or plays, so that
no work is lost to it (videos need imageio and imageio-ffmpeg: the video extra; W&B logging
the wandb extra)."""

import sys

import pytest

from podracer.agents.validation import ConfigError
from podracer.anakin import AnakinConfig
from podracer.anakin import train
from podracer.runs.tools.evaluate import main as evaluate_main
from podracer.runs.video import check_video_extra


@pytest.fixture
def no_ffmpeg(monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # its import now fails


def test_videos_without_the_extra_are_refused_before_training(tmp_path, no_ffmpeg):
    with pytest.raises(ConfigError, match="videos need the video extra: "):
        check_video_extra()
    config = AnakinConfig(total_env_steps=20_480, video_interval=10_240, run_name="v",
                          runs_root=str(tmp_path), progress=False, tensorboard=False)  # fmt: skip
    with pytest.raises(ConfigError, match="videos need the video extra"):
        train(config)
    # Nothing was trained or kept: the same name starts a fresh run once videos are off.
    run = tmp_path / "v"
    assert not (run / "checkpoints").exists() and not (run / "metrics.jsonl").exists()
    result = train(AnakinConfig(total_env_steps=4096, run_name="v", runs_root=str(tmp_path),
                                progress=False, tensorboard=False))  # fmt: skip
    assert result.env_steps >= 4096


def test_eval_with_videos_names_the_extra_before_loading_anything(tmp_path, capsys, no_ffmpeg):
    status = evaluate_main(["missing-run", "--video", "1", "--runs-root", str(tmp_path)])
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and "videos need the video extra" in err[0]


def test_wandb_without_the_extra_is_refused_as_the_run_opens(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # not installed, as importlib sees it
    config = AnakinConfig(total_env_steps=4096, wandb_project="p", wandb_mode="offline",
                          run_name="w", runs_root=str(tmp_path), progress=False)  # fmt: skip
    with pytest.raises(ConfigError, match="AnakinConfig.wandb_project needs the wandb extra: "):
        train(config)
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing built
