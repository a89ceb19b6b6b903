"""Context compaction: micro view, auto and manual summaries, transcripts."""
