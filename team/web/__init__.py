"""`team web`: the team and its compaction, live in a browser (docs/design.md, "team web")."""
