"""What the terminal shows: the status fold, the printer, the live table, warnings."""
