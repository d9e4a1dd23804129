"""Terminal-Bench and Harbor tasks as termgym tasks: read, check, convert (docs/importing.md).

`import_tasks` converts task folders (or folders of them) into a folder of termgym tasks;
`converted` does it on the fly, cached by content, for `--path` and TERMGYM_TASKS_PATH;
`suggest_overlay` proposes rules for an overlay; `resolve_source` turns a folder or a git
source (`git+URL@COMMIT`) into a folder of tasks; `overlay_folder` finds a folder of
overlays or a bundled collection (`tb2`).
"""

from __future__ import annotations

from termgym.importing._bundled import bundled_collections, overlay_folder
from termgym.importing._cache import converted, foreign_format
from termgym.importing._convert import Converted, convert
from termgym.importing._import import ImportReport, import_tasks, read_foreign
from termgym.importing._model import FORMATS, ForeignTask, normalize_id
from termgym.importing._source import GitSource, parse_source, resolve_source
from termgym.importing._suggest import Suggestion, as_overlay_yaml, suggest_overlay

__all__ = [
    "FORMATS",
    "Converted",
    "ForeignTask",
    "GitSource",
    "ImportReport",
    "Suggestion",
    "as_overlay_yaml",
    "bundled_collections",
    "convert",
    "converted",
    "foreign_format",
    "import_tasks",
    "normalize_id",
    "overlay_folder",
    "parse_source",
    "read_foreign",
    "resolve_source",
    "suggest_overlay",
]
