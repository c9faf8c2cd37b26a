# Type stub of the compiled search of ascending needles (_merge_search.c; optional: absent when no C compiler was
# found at install time, then intervals.search_sorted searches with numpy).
from typing import Any

def search_ascending(haystack: Any, needles: Any, out: Any, right: bool) -> None: ...
