"""Every sentence the loop tells an agent: identity, nudges, notices to the user."""
