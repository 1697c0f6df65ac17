#!/usr/bin/env bash
# Measures mcproxy's benchmarks and regenerates docs/benchmarks.md from the
# run. Each group's raw `go test -bench` output is saved in
# bench/results/<group>.txt with the commit, date and commands it was
# measured with; docs/benchmarks.md is then rendered from every saved group
# and the prose in docs/benchmarks.tmpl.md (go run ./bench/benchdoc).
#
#   bench/scripts/benchmarks.sh             # every group (long: about half an hour)
#   bench/scripts/benchmarks.sh e2e-noa     # one or more groups; the others keep their saved run
#   bench/scripts/benchmarks.sh --render    # only render the page from the saved runs
#
# Run it from a clean tree: the commit recorded is HEAD's (marked -dirty
# when the tree has changes). Benchmarks report ratios against a baseline
# measured in the same run; nothing here asserts a time.
set -euo pipefail
cd "$(dirname "$0")/../.."

# group → the commands that measure it, one per line.
declare -A groups=(
  [noa]="go test -run '^\$' -bench . -benchmem ./internal/noa"
  [session]="go test -run '^\$' -bench 'BenchmarkHostCall/messages=[0-9]+/fsync' -benchtime 2000x ./internal/session
go test -run '^\$' -bench BenchmarkTranscriptDurable -benchtime 2000x ./internal/session
go test -run '^\$' -bench 'BenchmarkHostCall/messages=[0-9]+/baseline' -benchtime 20x ./internal/session
go test -run '^\$' -bench BenchmarkHostPayload -benchtime 5x ./internal/session"
  [server]="go test -run '^\$' -bench RetrieveTools -benchtime 2000x ./internal/server"
  [index]="go test -run '^\$' -bench . -benchmem ./internal/index"
  [expand]="go test -run '^\$' -bench 'Expand/tools=.*/expand' -benchtime 2000x ./internal/expand"
  [tokens]="go test -run '^\$' -bench . -benchmem ./internal/tokens"
  [gateway]="go test -run '^\$' -bench GatewayOverhead -benchtime 30x ./internal/gateway"
  [e2e-calltool]="go test -run '^\$' -bench CallToolOverhead -benchtime 300x ./internal/e2e"
  [e2e-noa]="go test -run '^\$' -bench 'NoaOverhead/(small|retrieve)' -benchtime 500x ./internal/e2e
go test -run '^\$' -bench 'NoaOverhead/(read|write)' -benchtime 10x ./internal/e2e"
  [e2e-warm]="go test -run '^\$' -bench WarmStart -benchtime 3x ./internal/e2e"
  [e2e-callpath]="go test -run '^\$' -bench 'TypeScriptCallPath/echo' -benchtime 1000x ./internal/e2e
go test -run '^\$' -bench 'TypeScriptCallPath/(write|rss)' -benchtime 10x ./internal/e2e"
  [redact]="go test -run '^\$' -bench Redact -benchtime 20x ./internal/redact"
  [learn]="go test -run '^\$' -bench Lesson -benchtime 200x ./internal/learn"
)
order=(noa session server index expand tokens gateway e2e-calltool e2e-noa e2e-warm e2e-callpath redact learn)

selected=()
render_only=false
for arg in "$@"; do
  case "$arg" in
    --render) render_only=true ;;
    *)
      if [[ -z "${groups[$arg]+x}" ]]; then
        echo "benchmarks.sh: unknown group $arg (groups: ${order[*]})" >&2
        exit 2
      fi
      selected+=("$arg") ;;
  esac
done
if ! $render_only && [[ ${#selected[@]} -eq 0 ]]; then
  selected=("${order[@]}")
fi

commit=$(git rev-parse --short HEAD)
if [[ -n "$(git status --porcelain --untracked-files=no)" ]]; then
  commit="$commit-dirty"
fi
mkdir -p bench/results
for g in "${selected[@]}"; do
  out="bench/results/$g.txt"
  tmp="$out.tmp"
  {
    echo "# commit: $commit"
    echo "# date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
    while IFS= read -r cmd; do echo "# command: $cmd"; done <<<"${groups[$g]}"
  } >"$tmp"
  echo "== $g" >&2
  while IFS= read -r cmd; do
    echo "\$ $cmd" >&2
    if ! eval "$cmd" >>"$tmp" 2>&1; then
      echo "benchmarks.sh: $g failed; its output is in $tmp" >&2
      exit 1
    fi
  done <<<"${groups[$g]}"
  mv "$tmp" "$out"
done
go run ./bench/benchdoc -results bench/results -template docs/benchmarks.tmpl.md -out docs/benchmarks.md
echo "wrote docs/benchmarks.md" >&2
