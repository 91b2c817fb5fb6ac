"""Screens: the main workbench screen and the help screen."""
