"""A scrollable view of many lines, drawn on demand line by line (render_line with a cache)."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class LineView(ScrollView, can_focus=True):
    """Shows `line_count()` lines, each made by `line_text(i)` only when it scrolls into view.

    With `cursor_enabled`, one line is highlighted and follows the keys; subclasses react to
    moves in `cursor_moved`. Nothing is built per line up front, so 10,000,000 lines cost the
    same to open as 10.
    """

    DEFAULT_CSS = """
    LineView { background: $surface; }
    LineView > .line-view--cursor { background: $accent 40%; }
    LineView:focus > .line-view--cursor { background: $accent; color: $text; }
    """
    COMPONENT_CLASSES = {"line-view--cursor"}

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)
    cursor_enabled = True

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._cache: LRUCache[tuple[int, int, bool], Strip] = LRUCache(2048)
        self._width = 0

    # -- for subclasses ----------------------------------------------------------------------

    def line_count(self) -> int:
        """How many lines there are."""
        return 0

    def line_text(self, index: int) -> Text:
        """The content of line `index`."""
        return Text()

    def line_width(self) -> int:
        """The widest line, for horizontal scrolling (0: the view's width)."""
        return 0

    def cursor_moved(self, index: int) -> None:
        """Called after the cursor moved to `index`."""

    # -- drawing -----------------------------------------------------------------------------

    def reload_lines(self, clear: bool = True) -> None:
        """Re-read the line count (and, with `clear`, every line's content)."""
        if clear:
            self._cache.clear()
        width = max(self.line_width(), self.scrollable_content_region.width)
        self.virtual_size = Size(width, self.line_count())
        self.refresh()

    def on_resize(self) -> None:
        self._cache.clear()
        self.reload_lines(clear=False)
        if self.cursor_enabled:
            self.call_after_refresh(self._show_cursor)

    def _show_cursor(self) -> None:
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False, force=True)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= self.line_count():
            return Strip.blank(width, base)
        selected = self.cursor_enabled and index == self.cursor
        key = (index, width + scroll_x, selected)
        strip = self._cache.get(key)
        if strip is None:
            text = self.line_text(index)
            text.no_wrap = True
            text.overflow = "ellipsis" if not self.line_width() else "crop"
            if selected:
                text.stylize(self.get_component_rich_style("line-view--cursor"))
            total = max(width + scroll_x, 1)
            segments = list(text.render(self.app.console, end=""))
            strip = Strip(Segment.apply_style(segments, base), text.cell_len)
            strip = strip.crop_extend(0, total, base)
            self._cache[key] = strip
        return strip.crop(scroll_x, scroll_x + width)

    # -- the cursor --------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        if not self.cursor_enabled:
            return
        self.refresh()
        self._show_cursor()
        self.call_after_refresh(self._show_cursor)  # again once laid out (first show)
        self.cursor_moved(new)

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, self.line_count() - 1)) if self.line_count() else 0

    def move_cursor(self, index: int) -> None:
        """Put the cursor on line `index` (clamped)."""
        self.cursor = index

    def on_click(self, event: object) -> None:
        offset = getattr(event, "y", None)
        if self.cursor_enabled and isinstance(offset, int):
            self.cursor = self.scroll_offset.y + offset
