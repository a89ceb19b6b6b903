"""Studying compaction: numbers (`stats`), pictures (`report`) and archives (`transcripts`)
derived from `.team/events.db` and `.transcripts/`. Everything here only reads."""
