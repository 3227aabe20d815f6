"""Named settings are run configs a user could write by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import ConfigError
from dlsched.reproduce.settings import load_setting, read_setting, setting_names


@pytest.mark.parametrize("name", setting_names())
def test_every_setting_gives_a_valid_config_per_policy(name: str) -> None:
    setting = load_setting(name)
    assert setting.description and setting.source
    for policy in setting.policies:
        assert setting.config(policy).policies == (policy,)


def test_pollux_setting_has_the_artifact_tiresias() -> None:
    config = load_setting("pollux-osdi21").config("tiresias", trace="pollux-6")
    assert dict(config.policy_options)["thresholds"] == "57600"
    assert (config.cluster, config.trace, config.restart_overhead) == ("pollux-64", "pollux-6", 30)


def test_bad_settings_are_named(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("policies: {fifo: {speed: 2}}\n")
    with pytest.raises(ConfigError, match="setting s"):
        read_setting(path).config("fifo")
    with pytest.raises(ConfigError, match="no setting 'nope'"):
        load_setting("nope")
