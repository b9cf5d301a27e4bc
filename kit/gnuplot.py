"""Runs gnuplot for the kit's pictures (kit trace, the explorer, and the
extension parts' charts): one place that knows how it is found, fed and
cleaned up after."""
import os
import shutil
import subprocess
from typing import Iterable, Optional

MISSING = "gnuplot is not installed (sudo apt-get install gnuplot-nox); no PNG drawn"


def draw(script: str, data_files: Iterable[str] = ()) -> Optional[str]:
    """Runs `script`, then removes its data files; None, or why no picture was drawn."""
    gnuplot = shutil.which("gnuplot")
    try:
        if not gnuplot:
            return MISSING
        proc = subprocess.run([gnuplot], input=script.encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            return "gnuplot failed:\n" + proc.stdout.decode(errors="replace")
        return None
    finally:
        for path in data_files:
            if os.path.exists(path):
                os.unlink(path)
