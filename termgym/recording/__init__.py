"""Episode recordings (JSONL and asciicast v2), ATIF out and in, and run.json and results.jsonl."""

from __future__ import annotations

from termgym.recording._atif import (
    atif_to_episode,
    episode_to_atif,
    export_episode,
    export_run,
    import_atif,
    validate_atif,
)
from termgym.recording._atif_model import ATIF_VERSION, Trajectory
from termgym.recording._cast import CastIndex, CastReplay, index_cast
from termgym.recording._reader import (
    EpisodeFollower,
    EpisodeLog,
    RunLog,
    StepList,
    episode_files,
    latest_run,
    read_episode,
    read_run,
)
from termgym.recording._records import (
    CLASSES,
    GRADER_ERROR,
    INFRA_ERROR,
    SCHEMA_VERSION,
    STEP_MODES,
    EpisodeEnd,
    EpisodeHeader,
    StepRecord,
    end_from,
)
from termgym.recording._run_files import (
    RESULTS_FILE,
    RUN_FILE,
    ResultLine,
    append_result,
    last_results,
    read_results,
    read_run_header,
    write_run_header,
    write_whole,
)
from termgym.recording._synthetic import synthetic_steps, write_synthetic_episode
from termgym.recording._writer import (
    EpisodeWriter,
    NullRecorder,
    Recorder,
    RunWriter,
    new_run_id,
)

__all__ = [
    "RESULTS_FILE",
    "RUN_FILE",
    "ResultLine",
    "append_result",
    "last_results",
    "read_results",
    "ATIF_VERSION",
    "CLASSES",
    "GRADER_ERROR",
    "INFRA_ERROR",
    "SCHEMA_VERSION",
    "STEP_MODES",
    "CastIndex",
    "CastReplay",
    "EpisodeEnd",
    "EpisodeFollower",
    "EpisodeHeader",
    "EpisodeLog",
    "EpisodeWriter",
    "NullRecorder",
    "Recorder",
    "RunLog",
    "RunWriter",
    "StepList",
    "StepRecord",
    "Trajectory",
    "atif_to_episode",
    "end_from",
    "episode_to_atif",
    "episode_files",
    "export_episode",
    "export_run",
    "import_atif",
    "index_cast",
    "latest_run",
    "new_run_id",
    "read_episode",
    "read_run",
    "read_run_header",
    "synthetic_steps",
    "validate_atif",
    "write_run_header",
    "write_whole",
    "write_synthetic_episode",
]
