"""The harnesses' defaults that name mixers (the architectures compared when
--archs is not given, and the like): experiments/defaults.json, outside
harness/, which names no mixer itself (experiments/README.md)."""
import functools
import json
import os

from harness.common import ROOT, die

PATH = os.path.join(ROOT, "experiments", "defaults.json")


@functools.lru_cache(maxsize=1)
def _defaults():
    try:
        with open(PATH) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read the harnesses' defaults {PATH}: {e}")
    if not isinstance(d, dict):
        die(f"{PATH} is not a JSON object")
    return d


def default(section, key):
    """experiments/defaults.json's value of section.key; dies with one line where it has none."""
    value = _defaults().get(section, {}).get(key)
    if value is None:
        die(f"{PATH} has no {section}.{key}")
    return value
