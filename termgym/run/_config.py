"""What a run is: `RunConfig`, shared by the runner, its executors and the Ray workers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termgym._vocabulary import Variant, as_variant
from termgym.tasks import ContradictMode, Rotation, RuleDraw, Split


@dataclass(frozen=True)
class RunConfig:
    """What a run is: which agent, on which tasks and variants, how many, how fast.

    Attributes:
        agent: Registered agent name (oracle, memorizer, replay, llm, ...).
        tasks: Glob patterns over task ids.
        variants: The variants to run; a task that does not offer one skips it. A name
            that is no variant is an error here, when the config is made.
        episodes: Episodes per (task, variant).
        concurrency: Episodes run at once.
        out: The run folder (recordings, results, run.json).
        backend: Sandbox backend, or None for the best available.
        seed: Run seed; each episode's seed derives from it.
        agent_options: Keyword options for the agent factory.
        agent_timeout: Seconds the agent may act per episode (None: the task's limit).
        retries: Attempts beyond the first for infrastructure failures.
        shadow: Shadow-grade every episode.
        pool_size: Warm sandboxes per configuration.
        runtime: Docker runtime of the sandboxes ("runsc" for gVisor), None for the default.
        paths: Folders of tasks searched before $TERMGYM_TASKS_PATH and the bundled ones.
        split: "train" or "eval": which values the shifted variants draw
            (docs/held-out-values.md); with "eval", a shifted variant of a task without
            held-out values is left out of the run (`Runner.left_out` says which).
        contradict: "drawn" (a non-original value per episode) or "fixed" (the authored one).
        rotation: The evaluator's secret and period (never written anywhere), or None.
        metrics_port: Serve the run's metrics live on this port (None: no server; 0: any
            free port, see `Runner.metrics_port`).
        ray: Ray cluster address ("auto", "local", "ray://head:10001"); None runs here.
            On Ray, `concurrency` episode workers spread over the nodes that advertise
            sandboxes (docs/scaling.md), at most as many as those nodes hold.
        run_id: Put on every container as `io.termgym.run` and into recordings; defaults to
            the run folder's name.
        atif: Also write each finished episode as an ATIF trajectory, `<out>/atif/<id>.json`
            (docs/recording-format.md).
    """

    agent: str
    tasks: tuple[str, ...] = ("*",)
    variants: tuple[Variant, ...] = ("original", "contradicted", "withheld")
    episodes: int = 1
    concurrency: int = 2
    out: Path = Path("runs/latest")
    backend: str | None = None
    seed: int = 0
    agent_options: dict[str, Any] = field(default_factory=dict)
    agent_timeout: float | None = None
    retries: int = 2
    shadow: bool = True
    pool_size: int = 1
    runtime: str | None = None
    paths: tuple[str, ...] = ()
    split: Split = "train"
    contradict: ContradictMode = "drawn"
    rotation: Rotation | None = None
    metrics_port: int | None = None
    ray: str | None = None
    run_id: str = ""
    atif: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.tasks, str) or not self.tasks:
            raise ValueError(f"tasks: expected a tuple of task ids or globs, found {self.tasks!r}")
        if isinstance(self.variants, str) or not self.variants:
            raise ValueError(f"variants: expected a tuple of variants, found {self.variants!r}")
        for name in self.variants:
            as_variant(name)
        if self.agent_timeout is not None and not self.agent_timeout >= 0:
            raise ValueError(
                "agent_timeout: expected seconds >= 0 (0: the agent's time is up at once; "
                f"None: the task's limit), found {self.agent_timeout!r}"
            )

    @property
    def rule_draw(self) -> RuleDraw:
        """How the run's shifted variants draw their values."""
        return RuleDraw(self.split, self.contradict, self.rotation)

    @property
    def run_name(self) -> str:
        """The run id: `run_id`, or the run folder's name."""
        return self.run_id or self.out.name
