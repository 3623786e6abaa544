"""Approval mode: an agent's recommendation waits for an admin's decision before any change."""
