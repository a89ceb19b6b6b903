"""The shared data types: conversation, events, errors, facts in free text."""
