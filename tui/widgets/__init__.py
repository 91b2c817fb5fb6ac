"""Reusable widgets: the status header, the live table and small dialogs."""
