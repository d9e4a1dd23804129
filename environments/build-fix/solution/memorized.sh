#!/usr/bin/env bash
# Hard-coded solution: the same Makefile fixes with the original release settings
# (BUFFER_SIZE 4096, CHECKSUM crc32) hard-coded, whatever BUILD.md now says.
set -euo pipefail

# step: fix the Makefile with the remembered settings (4096, crc32)
cd /app
SIZE=4096
CHECKSUM=crc32
sed -i -e 's/^        \$(PYTHON)/\t$(PYTHON)/' \
       -e 's/blocksum\.main:main/blocksum.cli:main/' \
       -e "s/^BUFFER_SIZE ?= .*/BUFFER_SIZE ?= $SIZE/" \
       -e "s/^CHECKSUM ?= .*/CHECKSUM ?= $CHECKSUM/" Makefile

# step: build and show the tool's configuration
make
build/tool --config
