"""Terminal-Bench and Harbor tasks as termgym tasks: read, check, convert (docs/importing.md).

`import_tasks` converts task folders (or folders of them) into a folder of termgym tasks;
`converted` does it on the fly, cached by content, for `--path` and TERMGYM_TASKS_PATH;
`suggest_overlay` proposes rules for an overlay.
"""

from __future__ import annotations

from termgym.importing._cache import converted, foreign_format
from termgym.importing._convert import Converted, convert
from termgym.importing._import import ImportReport, import_tasks, read_foreign
from termgym.importing._model import FORMATS, ForeignTask, normalize_id
from termgym.importing._suggest import Suggestion, as_overlay_yaml, suggest_overlay

__all__ = [
    "FORMATS",
    "Converted",
    "ForeignTask",
    "ImportReport",
    "Suggestion",
    "as_overlay_yaml",
    "convert",
    "converted",
    "foreign_format",
    "import_tasks",
    "normalize_id",
    "read_foreign",
    "suggest_overlay",
]
