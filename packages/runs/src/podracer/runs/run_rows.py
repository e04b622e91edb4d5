"""A run's metric rows, one room of `Run` (`Run.rows`): where they are written
(metrics.jsonl, TensorBoard, Weights & Biases through `MetricWriter`), what the caller
gets back (`history`: this session's rows; `earlier`: a resumed run's rows of its earlier
sessions; `on_row`), and the progress line that shows them. `Run` decides when a row is
due and what its step, SPS and elapsed time are (its loop, its clock); this room holds
where the row goes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from podracer.runs.config import RunConfig
from podracer.runs.directory import RunDir
from podracer.runs.progress import Progress
from podracer.runs.result import history_return
from podracer.runs.writer import MetricWriter
from podracer.runs.writer import hyperparameter_table


class RunRows:
    """The rows of the run `config` names, written by process 0 only (`is_writer`).

    `on_row(row)` is called in the logging thread with each row, as `history` holds it
    (`env_steps`, a member's tags, the metrics), on the writing process only."""

    def __init__(
        self, config: RunConfig, runtime: str, is_writer: bool,
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:  # fmt: skip
        self.config = config
        self.runtime = runtime
        self.is_writer = is_writer
        self.history: list[dict[str, Any]] = []  # this session's rows, as in metrics.jsonl
        self._on_row = on_row
        self._writer = MetricWriter(None)
        self._progress: Progress | None = None
        self._recent_return = math.nan
        self._return_time = -math.inf  # when the progress line's return was last computed

    def open(
        self, directory: RunDir, env_steps: int, total_env_steps: int, restored_rows: int | None
    ) -> None:
        """Opens the writer (a resume keeps metrics.jsonl's rows up to `env_steps`, the
        restored checkpoint's, and sets the later ones aside) and the progress line; says
        so if rows the checkpoint had logged (`restored_rows`) were deleted by hand."""
        config = self.config
        table = {"runtime": self.runtime, **config.to_json()}
        wandb = None
        if config.wandb_project:
            wandb = dict(
                project=config.wandb_project, entity=config.wandb_entity, mode=config.wandb_mode,
                config=table,
            )  # fmt: skip
        self._writer = MetricWriter(
            directory if self.is_writer else None, config.tensorboard,
            truncate_after=env_steps if config.resume else None, wandb=wandb,
        )  # fmt: skip
        # As CleanRL does: the config as a table in TensorBoard's text tab.
        self._writer.write_text("hyperparameters", hyperparameter_table(table), env_steps)
        self._progress = Progress(
            total_env_steps, env_steps, enabled=config.progress and self.is_writer
        )
        if self.is_writer and restored_rows is not None and self.written < restored_rows:
            self.status(
                f"{self.runtime}: metrics.jsonl holds {self.written:,} rows up to env step "
                f"{env_steps:,}, where the run had logged {restored_rows:,}: rows deleted from "
                f"it are not made again (the run continues from its checkpoint)",
                always=True,
            )

    @property
    def written(self) -> int:
        """Rows in metrics.jsonl (earlier sessions' kept, and this one's)."""
        return self._writer.rows

    @property
    def earlier(self) -> list[dict[str, Any]]:
        """A resumed run's rows of its earlier sessions, up to the restored checkpoint."""
        return self._writer.earlier

    def started(self, path: str, how: str, rounding: str | None, status: str) -> None:
        """The start's lines: the run (`how` it starts), the rounding of its length (on
        the writing process, even with the progress line off) and what comes next."""
        config, runtime = self.config, self.runtime
        self.status(f"{runtime}: {config.agent} on {config.env}, run {path} ({how})")
        if rounding and self.is_writer:
            self.status(f"{runtime}: {rounding}", always=True)
        self.status(f"{runtime}: {status}")

    def status(self, text: str, always: bool = False) -> None:
        """A line above the progress bar (`always`: even with the progress line off)."""
        if self._progress is not None:
            self._progress.status(text, always=always)

    def log(
        self,
        env_steps: int,
        row: dict[str, float] | list[dict[str, float]],
        tags: list[Mapping[str, Any]] | None,
        timing: tuple[float, float],
        last: bool,
        sps_after_compile: float,
    ) -> None:
        """`Run.log`'s row, or its list of one per member (`tags`: theirs), with
        `charts/SPS` and `timing/elapsed` (`timing`, `RunClock.row`'s) where the runtime
        did not set them."""
        rows = row if isinstance(row, list) else [row]
        tags = [{}] if tags is None else tags
        if len(tags) != len(rows):
            raise ValueError(f"Run.log: {len(rows)} rows for {len(tags)} members")
        sps, elapsed = timing  # one value for every member's row of this step
        for r in rows:
            if math.isfinite(sps):  # not in a row of the step that compiled (`RunClock.row`)
                r.setdefault("charts/SPS", sps)
            r.setdefault("timing/elapsed", elapsed)
        self.write(env_steps, rows, tags, last, sps_after_compile)

    def write(
        self,
        env_steps: int,
        rows: list[dict[str, float]],
        tags: list[Mapping[str, Any]],
        last: bool,
        sps_after_compile: float,
    ) -> None:
        """Writes one row per tag at `env_steps` and moves the progress line (`last`: the
        run's last step, whose return the line always shows)."""
        for tag, row in zip(tags, rows, strict=True):
            self._writer.write(env_steps, row, tag)
            entry = {"env_steps": env_steps, **tag, **row}
            self.history.append(entry)
            if self._on_row is not None and self.is_writer:
                self._on_row(dict(entry))
        if self._progress is not None:
            # The summary's final return, of the whole run's rows so far (the two agree at
            # the end); once a second at most, as it reads every row.
            now = time.perf_counter()
            if last or now - self._return_time >= 1.0:
                rows_so_far = self.earlier + self.history
                self._recent_return, self._return_time = history_return(rows_so_far), now
            self._progress.update(env_steps, sps_after_compile, self._recent_return)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.close()
        self._writer.close()
