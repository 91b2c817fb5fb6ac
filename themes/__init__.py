"""natslab's themes, as data.

A theme file is TOML::

    name = "natslab-dark"        # how it appears in the palette
    dark = true                  # dark or light base
    [colors]                     # any of Textual's theme colours
    primary = "#4aa3df"          # required
    secondary = "#8a7fd4"
    accent = "#f2a541"
    warning = "#f2c94c"
    error = "#eb5757"
    success = "#6fcf97"
    foreground = "#d8dee9"
    background = "#141a21"
    surface = "#1b232c"
    panel = "#24303b"
    [variables]                  # optional Textual CSS variables
    "footer-key-foreground" = "#f2a541"

Files shipped here are always available; users drop more ``*.toml`` files in
the platformdirs config dir (``~/.config/natslab/themes`` on Linux). A file
that cannot be read is reported, never fatal.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

COLOR_KEYS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)
DEFAULT_THEME = "natslab-dark"


class ThemeFileError(ValueError):
    """A theme file that cannot be turned into a Theme, in plain words."""


def builtin_dir() -> Path:
    return Path(__file__).parent


def load_theme_file(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeFileError(f"{path.name}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"{path.name}: not valid TOML: {exc}") from None
    name = data.get("name") or path.stem
    colors = data.get("colors") or {}
    if not isinstance(colors, dict) or "primary" not in colors:
        raise ThemeFileError(f"{path.name}: [colors] must set at least 'primary'")
    unknown = sorted(set(colors) - set(COLOR_KEYS))
    if unknown:
        raise ThemeFileError(f"{path.name}: unknown colour(s) {', '.join(unknown)}")
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ThemeFileError(f"{path.name}: [variables] must be a table")
    try:
        theme = Theme(
            name=str(name),
            dark=bool(data.get("dark", True)),
            variables={str(k): str(v) for k, v in variables.items()},
            **{k: str(v) for k, v in colors.items()},
        )
        theme.to_color_system()  # parses every colour: fail here, not at render time
    except Exception as exc:
        raise ThemeFileError(f"{path.name}: {exc}") from None
    return theme


def load_themes(*dirs: Path) -> tuple[list[Theme], list[str]]:
    """Themes from the built-in dir and ``dirs`` (later files win), plus problems found."""
    themes: dict[str, Theme] = {}
    problems: list[str] = []
    for directory in (builtin_dir(), *dirs):
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                theme = load_theme_file(path)
            except ThemeFileError as exc:
                problems.append(str(exc))
                continue
            themes[theme.name] = theme
    return list(themes.values()), problems
