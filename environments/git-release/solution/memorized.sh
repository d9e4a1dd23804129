#!/usr/bin/env bash
# Hard-coded solution: the original release rules (minor bump, tags named v<version>)
# hard-coded, whatever CONTRIBUTING.md now says.
set -euo pipefail

# step: bump the version the remembered way (minor) and date the changelog
cd /app/repo
BUMP=minor
PREFIX=v
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

# step: commit and tag the release (tag v<version>)
git add VERSION CHANGELOG.md src/hashring/__init__.py
git commit -q -m "Release $VERSION"
git tag -a "$PREFIX$VERSION" -m "Release $VERSION"
git log --oneline -2 && git tag --points-at HEAD
