"""`python -m irnorm ...` is the `irnorm` command."""

from __future__ import annotations

from .cli import console_main

if __name__ == "__main__":
    console_main()
