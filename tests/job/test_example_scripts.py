"""examples/train_*.py as a user first meets them: ``--help`` describes the script in whole
sentences, and without torch the script says in one line which extra to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"
SCRIPTS = ["train_cnn.py", "train_transformer.py"]

# run the script as `python examples/X.py` would, with torch made unimportable
WITHOUT_TORCH = ("import runpy, sys; sys.modules['torch'] = None; "
                 "sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[2:]; "
                 "runpy.run_path(sys.argv[0], run_name='__main__')")


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_torch_one_line_names_the_extra(script: str) -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_TORCH, str(EXAMPLES),
                           str(EXAMPLES / script), "--steps", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"examples/{script} needs the torch extra (no module named 'torch'): "
        "pip install 'dlsched[torch]'"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_describes_the_script_in_whole_sentences(script: str) -> None:
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--help"],
                          capture_output=True, text=True, timeout=120, check=True)
    description = " ".join(done.stdout.split("\n\n")[1].split())
    assert description.endswith("on SIGTERM it saves and exits 0.")
