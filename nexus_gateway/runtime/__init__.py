"""Small runtime helpers: line hand-off, deadlines, the heap, JSON, process exits, watched files, state files."""
