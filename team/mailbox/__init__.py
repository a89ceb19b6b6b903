"""Durable file inboxes."""
