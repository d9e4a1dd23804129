#!/usr/bin/env bash
# Reference solution: a backup.sh that reads backup.conf on every run. A setting withheld
# from the file falls back to the value in $TERMGYM_WITHHELD_RULES.
set -euo pipefail

# step: take the withheld settings' fallbacks, if any
APP="${TERMGYM_WORKDIR:-/app}"
read -r FALLBACK_DAYS FALLBACK_KEEP < <(python3 -c '
import json, os
w = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")
print(w.get("retention_days", "-"), w.get("keep_count", "-"))')

# step: write backup.sh, which reads config/backup.conf on every run
cat > "$APP/backup.sh" <<SH
#!/usr/bin/env bash
# Nightly backup: see README.md. Settings come from config/backup.conf.
set -euo pipefail
CONF="$APP/config/backup.conf"
conf() { sed -n "s/^[[:space:]]*\$1[[:space:]]*=[[:space:]]*//p" "\$CONF" | tail -n 1 | tr -d '\r'; }
SRC="\${SOURCE_DIR:-\$(conf SOURCE_DIR)}"
DST="\${BACKUP_DIR:-\$(conf BACKUP_DIR)}"
DAYS="\$(conf RETENTION_DAYS)"; DAYS="\${DAYS:-$FALLBACK_DAYS}"
KEEP="\$(conf KEEP_COUNT)"; KEEP="\${KEEP:-$FALLBACK_KEEP}"
mkdir -p "\$DST"
NOW=\$(date +%s)
ARCHIVE="\$DST/backup-\$(date -u -d "@\$NOW" +%Y%m%d-%H%M%S).tar.gz"
(cd "\$SRC" && find . -type f -newermt "@\$((NOW - DAYS * 86400))" -print0 \\
  | tar --null -czf "\$ARCHIVE" -T -)
ls -1 "\$DST" | grep -E '^backup-[0-9]{8}-[0-9]{6}\.tar\.gz\$' | sort -r \\
  | tail -n +\$((KEEP + 1)) | while read -r old; do rm -f -- "\$DST/\$old"; done
echo "\$ARCHIVE"
SH

# step: make it executable and run it once
chmod +x "$APP/backup.sh"
bash "$APP/backup.sh"
