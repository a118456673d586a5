"""REASONING_STREAM_PROFILES=/path/profiles.toml registers its rows at import (a fresh
interpreter each time, since the variable is read once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, warnings
warnings.simplefilter("error")
from reasoning_stream import profiles
p = profiles.lookup("anthropic", "claude-next-2")
q = profiles.lookup("bedrock", "arn:aws:bedrock:us-east-1:1:application-inference-profile/abc")
print(json.dumps({
    "registered": [list(r) for r in profiles.registered()],
    "next": [p.thinking, list(p.efforts), p.passback, p.pattern],
    "arn": [q.thinking, q.passback, q.known],
}))
"""

FILE = """
[[row]]
provider = "anthropic"
pattern = "claude-next-*"
base = "claude-opus-5"
efforts = ["low", "high", "max"]

[[row]]
provider = "bedrock"
models = ["arn:aws:bedrock:us-east-1:1:application-inference-profile/abc"]
base = "anthropic.claude-opus-5-5"
"""


def _run(path: Path | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REASONING_STREAM_PROFILES", None)
    if path is not None:
        env["REASONING_STREAM_PROFILES"] = str(path)
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_file_named_by_the_variable_is_registered_at_import(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(FILE, encoding="utf-8")
    done = _run(path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["registered"] == [
        ["anthropic", "claude-next-*"],
        ["bedrock", "arn:aws:bedrock:us-east-1:1:application-inference-profile/abc"],
    ]
    assert out["next"] == ["default_on", ["low", "high", "max"], "always", "claude-next-*"]
    assert out["arn"] == ["always", "always", True]


def test_without_the_variable_nothing_is_registered() -> None:
    done = _run(None)
    # claude-next-2 is unknown then: the probe turns the warning into an error.
    assert done.returncode != 0
    assert "UnknownModelWarning" in done.stderr and "profiles.register" in done.stderr


def test_a_bad_file_names_the_file_the_row_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(FILE.replace('efforts = ["low", "high", "max"]', 'efforts = ["huge"]'))
    done = _run(path)
    assert done.returncode != 0
    assert "UsageError" in done.stderr
    assert f"{path} row 1" in done.stderr and "'huge'" in done.stderr
    missing = _run(tmp_path / "absent.toml")
    assert "REASONING_STREAM_PROFILES=" in missing.stderr and "absent.toml" in missing.stderr


def test_the_package_loads_profiles_only_when_asked() -> None:
    code = (
        "import sys, reasoning_stream\n"
        "assert 'reasoning_stream.profiles' not in sys.modules\n"
        "from reasoning_stream import profiles\n"
        "assert profiles is reasoning_stream.profiles is sys.modules['reasoning_stream.profiles']\n"
        "assert 'profiles' in dir(reasoning_stream)\n"
        "print(profiles.lookup('anthropic', 'claude-opus-5').thinking)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REASONING_STREAM_PROFILES", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "default_on"
