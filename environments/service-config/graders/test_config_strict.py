"""Hidden checks (pool): a strict reading of webapp.ini and the service's own validation."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
CONFIG = APP / "etc" / "webapp.ini"
EXAMPLE = Path(__file__).with_name("webapp.ini.example")
SERVICE = Path(__file__).with_name("reference_webapp.py")


def strict(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    with open(path) as handle:
        parser.read_file(handle)
    return parser


def test_every_example_setting_is_present_once_and_filled_in(rules):
    config, example = strict(CONFIG), strict(EXAMPLE)
    assert config.sections() == example.sections()
    for section in example.sections():
        assert sorted(config.options(section)) == sorted(example.options(section)), section
        for option in config.options(section):
            assert "CHANGE_ME" not in config.get(section, option), f"{section}.{option}"
    assert config.get("server", "port").strip() == str(rules["port"])
    assert config.get("server", "max_connections").strip() == str(rules["max_connections"])
    assert config.get("logging", "level").strip() == rules["log_level"]
    assert config.get("app", "static_dir") == example.get("app", "static_dir")


def test_the_service_accepts_the_config_and_would_use_the_guides_values(rules):
    done = subprocess.run(
        [sys.executable, str(SERVICE), "--check", str(CONFIG)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 0, done.stderr[-500:]
    settings = json.loads(done.stdout)
    assert (settings["host"], settings["port"]) == ("127.0.0.1", rules["port"])
    assert settings["max_connections"] == rules["max_connections"]
    assert settings["log_level"] == rules["log_level"]
