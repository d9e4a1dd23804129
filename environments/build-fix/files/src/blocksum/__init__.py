"""blocksum: per-block checksums of a file, for spotting which part of a transfer went wrong."""
