#!/usr/bin/env bash
# Perturb real Terminal-Bench and Harbor tasks with the overlays of docs/overlays/ and show,
# with `termgym run`, the memorizer (the task's own solution) go stale and the rewritten
# oracle adapt on contradicted episodes (docs/importing.md, "Overlays on real tasks").
#
#   scripts/real-overlays.sh OUT NAME=TASK_FOLDER...
#
# NAME is the overlay's name (docs/overlays/NAME.yaml) and TASK_FOLDER a Terminal-Bench or
# Harbor task folder of a checkout of its public repository (termgym vendors none of them).
# Environment: TERMGYM (default: .venv/bin/termgym), BACKEND (default: docker), EPISODES
# (default: 2 per task and variant), VARIANTS (default: original,contradicted), JOBS
# (default: 2, for check and run).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
termgym=${TERMGYM:-$here/.venv/bin/termgym}
backend=${BACKEND:-docker}
episodes=${EPISODES:-2}
variants=${VARIANTS:-original,contradicted}
jobs=${JOBS:-2}
overlays=$here/docs/overlays

if [[ $# -lt 2 ]]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
out=$1
shift
mkdir -p "$out/sources/tb" "$out/sources/harbor"
names=()
for pair in "$@"; do
  name=${pair%%=*} folder=${pair#*=}
  if [[ "$name" == "$pair" || ! -d "$folder" ]]; then
    echo "expected NAME=TASK_FOLDER with an existing folder, found: $pair" >&2
    exit 2
  fi
  if [[ ! -f "$overlays/$name.yaml" ]]; then
    echo "expected an overlay at docs/overlays/$name.yaml for $name, found none" >&2
    exit 2
  fi
  if [[ -f "$folder/task.toml" ]]; then
    format=harbor
  elif [[ -f "$folder/task.yaml" && -f "$folder/run-tests.sh" ]]; then
    format=tb
  else
    echo "expected a Terminal-Bench or Harbor task at $folder, found neither" >&2
    exit 2
  fi
  ln -sfn "$(cd "$folder" && pwd)" "$out/sources/$format/$name"
  names+=("$name")
done
tasks=$(IFS=,; echo "${names[*]}")

for format in tb harbor; do
  if compgen -G "$out/sources/$format/*" >/dev/null; then
    "$termgym" import "$format" "$out/sources/$format" --out "$out/tasks" --overlays "$overlays" |
      grep -v '^unused ' | tee -a "$out/import.txt"
  fi
done

# Every variant: the rewritten oracle passes, the original solution goes stale on contradicted.
(cd "$out" && time "$termgym" check --path tasks --backend "$backend" -j "$jobs") 2>&1 |
  tee "$out/check.txt"

for agent in memorizer oracle; do
  "$termgym" run --agent "$agent" --path "$out/tasks" --tasks "$tasks" --variants "$variants" \
    --episodes "$episodes" --concurrency "$jobs" --backend "$backend" --out "$out/runs/$agent" \
    --no-report
done
"$termgym" report "$out/runs/memorizer" "$out/runs/oracle" | tee "$out/report.txt"
echo "import, check, runs and report: $out"
