"""Record the offline demo as an SVG terminal picture: ``python docs/record_demo.py [OUT]``.

Runs ``reasoning-stream demo`` (recorded wire bytes through the real SDKs; no key, no network)
with colour forced on, and draws what it printed with rich's SVG export (the ``cli`` extra).
The site and the README show the result, ``docs/demo.svg``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WIDTH = 100


def record(out: Path) -> str:
    """Run the demo, write its terminal picture to ``out`` and return the text it printed."""
    from rich.console import Console
    from rich.text import Text

    environment = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": str(WIDTH)}
    environment.pop("NO_COLOR", None)
    printed = subprocess.run(
        [sys.executable, "-m", "reasoning_stream", "demo"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one pipe: the lines stay in the order they were written
        text=True,
        check=True,
        timeout=120,
    )
    output = printed.stdout
    with open(os.devnull, "w") as nowhere:  # recorded, not shown
        console = Console(record=True, width=WIDTH, file=nowhere)
        console.print(Text.from_ansi(f"$ reasoning-stream demo\n{output}"))
    console.save_svg(str(out), title="reasoning-stream demo")
    return output


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("demo.svg"))
