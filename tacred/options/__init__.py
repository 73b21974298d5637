"""Checks run before Lightning loads: option rules and types, config files, a command line's options and data files."""
