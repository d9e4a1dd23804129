#!/usr/bin/env bash
# Reference solution: fixes the Makefile (a recipe line indented with spaces, a wrong zipapp
# entry point), sets the release settings read from BUILD.md (withheld ones from
# $TERMGYM_WITHHELD_RULES) as the Makefile defaults, and builds.
set -euo pipefail

# step: take the release settings BUILD.md states
cd /app
read -r SIZE CHECKSUM < <(python3 - <<'PY'
import json, os, re
text = open("/app/BUILD.md").read()
release = text.split("## Release configuration", 1)[1].split("\n## ", 1)[0]
withheld = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")
size = re.search(r"`BUFFER_SIZE`: (\d+)", release)
checksum = re.search(r"`CHECKSUM`: (\w+)", release)
print(size.group(1) if size else withheld["buffer_size"],
      checksum.group(1) if checksum else withheld["checksum"])
PY
)

# step: fix the Makefile and set those settings as its defaults
sed -i -e 's/^        \$(PYTHON)/\t$(PYTHON)/' \
       -e 's/blocksum\.main:main/blocksum.cli:main/' \
       -e "s/^BUFFER_SIZE ?= .*/BUFFER_SIZE ?= $SIZE/" \
       -e "s/^CHECKSUM ?= .*/CHECKSUM ?= $CHECKSUM/" Makefile

# step: build and show the tool's configuration
make
build/tool --config
