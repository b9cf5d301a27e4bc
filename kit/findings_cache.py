"""The checks' findings, kept in the build by the content they were found in
(static_checks.static_findings, link_check.object_findings), so that
`make test` checks only an edited file again."""
import json
import os
from typing import Dict


def load(path: str) -> Dict:
    try:
        with open(path) as f:
            cache = json.load(f)
        return cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        return {}


def save(path: str, cache: Dict) -> None:
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(cache, f)
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # a read-only build only checks again next time
