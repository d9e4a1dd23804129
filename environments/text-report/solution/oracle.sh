#!/usr/bin/env bash
# Reference solution: read the minimum length and the cut-off from SPEC.md (or, for a rule
# withheld from it, from $TERMGYM_WITHHELD_RULES), write report.sh, and run it.
set -euo pipefail

# step: take the minimum length and the cut-off SPEC.md states
APP="${TERMGYM_WORKDIR:-/app}"
read -r MIN_LENGTH TOP_N < <(python3 - "$APP/SPEC.md" <<'PY'
import json, os, re, sys
spec = open(sys.argv[1]).read()
fallback = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")
m = re.search(r"long when it has at least (\d+) letters", spec)
t = re.search(r"keeps the first (\d+) words", spec)
print(m.group(1) if m else fallback["min_length"], t.group(1) if t else fallback["top_n"])
PY
)

# step: write report.sh with them
cat > "$APP/report.sh" <<SH
#!/usr/bin/env bash
# Long-word report: see SPEC.md.
set -euo pipefail
DATA="\${1:-$APP/data}"
OUT="\${2:-$APP/out/summary.txt}"
mkdir -p "\$(dirname "\$OUT")"
python3 - "\$DATA" "\$OUT" <<'PY'
import collections, pathlib, re, sys
data, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
counts = collections.Counter()
for path in sorted(data.glob("*.txt")):
    if path.is_file():
        text = path.read_bytes().decode("utf-8", "replace")
        counts.update(w.lower() for w in re.findall(r"[A-Za-z]+", text) if len(w) >= $MIN_LENGTH)
ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:$TOP_N]
out.write_text("".join(f"{w} {n}\n" for w, n in ranked))
PY
SH

# step: make it executable and run it
chmod +x "$APP/report.sh"
bash "$APP/report.sh"
