"""Placeholder: commands are added here as they are built."""
