#!/usr/bin/env bash
# Reference solution: reads the version bump and the tag prefix from CONTRIBUTING.md
# (withheld ones from $TERMGYM_WITHHELD_RULES) and cuts the release as it describes.
set -euo pipefail

# step: take the version bump and the tag prefix CONTRIBUTING.md states
cd /app/repo
read -r BUMP PREFIX < <(python3 - <<'PY'
import json, os, re
text = open("CONTRIBUTING.md").read()
withheld = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")
bump = re.search(r"increments the \*\*(\w+)\*\* number", text)
prefix = re.search(r"Release tags are named `([^`<]*)<new version>`", text)
print(bump.group(1) if bump else withheld["version_bump"],
      prefix.group(1) if prefix else withheld["tag_prefix"])
PY
)

# step: bump the version and date the changelog
VERSION=$(python3 - "$BUMP" <<'PY'
import sys
major, minor, patch = (int(p) for p in open("VERSION").read().split("."))
bump = sys.argv[1]
print({"major": f"{major + 1}.0.0", "minor": f"{major}.{minor + 1}.0",
       "patch": f"{major}.{minor}.{patch + 1}"}[bump])
PY
)
python3 - "$VERSION" <<'PY'
import datetime, re, sys
version = sys.argv[1]
open("VERSION", "w").write(version + "\n")
init = open("src/hashring/__init__.py").read()
open("src/hashring/__init__.py", "w").write(
    re.sub(r'__version__ = "[^"]+"', f'__version__ = "{version}"', init))
log = open("CHANGELOG.md").read()
today = datetime.date.today().isoformat()
log = log.replace("## [Unreleased]\n", f"## [Unreleased]\n\n## [{version}] - {today}\n", 1)
open("CHANGELOG.md", "w").write(log)
PY

# step: commit and tag the release
git add VERSION CHANGELOG.md src/hashring/__init__.py
git commit -q -m "Release $VERSION"
git tag -a "$PREFIX$VERSION" -m "Release $VERSION"
git log --oneline -2 && git tag --points-at HEAD
