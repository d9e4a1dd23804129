#!/usr/bin/env bash
# Hard-coded solution: the original spec (at least 7 letters, top 10) hard-coded.
set -euo pipefail

# step: write report.sh with the remembered spec (7 letters, top 10)
APP="${TERMGYM_WORKDIR:-/app}"
cat > "$APP/report.sh" <<SH
#!/usr/bin/env bash
set -euo pipefail
DATA="\${1:-$APP/data}"
OUT="\${2:-$APP/out/summary.txt}"
mkdir -p "\$(dirname "\$OUT")"
cat "\$DATA"/*.txt | tr -c 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | awk 'length(\$0) >= 7' \
  | sort | uniq -c | sort -k1,1nr -k2,2 | head -n 10 | awk '{print \$2, \$1}' > "\$OUT" || true
SH

# step: make it executable and run it
chmod +x "$APP/report.sh"
bash "$APP/report.sh"
