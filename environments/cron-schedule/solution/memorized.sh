#!/usr/bin/env bash
# Hard-coded solution: the original schedule (backup Sundays at 02:30, rotation every
# 15 minutes) hard-coded, whatever ops/schedule.md now says.
set -euo pipefail

# step: write the crontab with the remembered schedule (Sundays 02:30, every 15 min)
cat > /app/crontab <<'CRON'
# Reporting host jobs (see ops/schedule.md)
# m h dom mon dow command
30 2 * * sun /opt/reports/bin/backup.sh --full
*/15 * * * * /opt/reports/bin/rotate-logs.sh
45 7 * * mon-fri /opt/reports/bin/mail-report.sh --to analysts@example.com
CRON

# step: show it
cat /app/crontab
