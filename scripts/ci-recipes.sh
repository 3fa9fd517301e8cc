#!/usr/bin/env bash
# Proves the recipes of docs/ci-gate.md: runs each one as printed, from a user's repository.
#
#   scripts/ci-recipes.sh [OLD_REV [NEW_REV]]
#
# It makes a throwaway project (`cargo new`, committed, with a recorded trace at
# ci/my-server.trace) in a temporary directory, extracts every ```sh block marked
# `<!-- recipe: NAME -->` from docs/ci-gate.md, and runs each one, in document order, in a fresh
# clone of that project, with `bash -eu`. Only the variables at the top of a block are
# substituted: TICKWHEEL_GIT=file://<this checkout>, OLD and NEW (default HEAD~1 and HEAD of
# this checkout, as full hashes: `cargo install --git` sees commits only, not working changes),
# and WORKLOAD (CI_RECIPES_WORKLOAD, default a short one: --duration 1s --connections 2000
# --rate 20000). A recipe that commits (the baseline) pushes to the project, so the recipes after
# it see the commit, as a CI checkout would.
#
# A recipe passes when it exits 0, or exits 1 after naming a REGRESSION or COUNTS DIFFER (the
# gate ran and judged NEW against OLD), and leaves its clone without untracked or changed files. The script
# also checks that docs/ci/loadgen-gate.yml runs the commands of the `paired-simulated` recipe
# and is valid YAML (when python3 has the yaml module).
#
# Every `cargo install` shares one build directory (each clone's target/tickwheel-gate/build is
# a link to it), so each revision is compiled once: CI_RECIPES_TARGET_DIR names one to keep
# between runs (default: inside the temporary directory). The first run compiles the load
# generator twice in release mode (a few minutes each on 2 cores). Nothing is written to this
# checkout; cargo keeps its copy of the git repository under CARGO_HOME, as for any git
# install. Needs valgrind. Exit 0 when every recipe passed, 1 naming the ones that failed, 2 when
# the setup failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
doc=$root/docs/ci-gate.md
yml=$root/docs/ci/loadgen-gate.yml
workload=${CI_RECIPES_WORKLOAD:---duration 1s --connections 2000 --rate 20000}

die() { echo "ci-recipes: $*" >&2; exit 2; }
command -v valgrind >/dev/null || die "needs valgrind (sudo apt-get install valgrind)"
old=$(git -C "$root" rev-parse --verify --quiet "${1:-HEAD~1}^{commit}") || die "no commit ${1:-HEAD~1}"
new=$(git -C "$root" rev-parse --verify --quiet "${2:-HEAD}^{commit}") || die "no commit ${2:-HEAD}"
url=file://$root

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ci-recipes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
build=${CI_RECIPES_TARGET_DIR:-$tmp/build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
unset CARGO_TARGET_DIR
export GIT_AUTHOR_NAME=ci-recipes GIT_AUTHOR_EMAIL=ci-recipes@example.invalid
export GIT_COMMITTER_NAME=ci-recipes GIT_COMMITTER_EMAIL=ci-recipes@example.invalid
echo "== ci-recipes: OLD=${old:0:12} NEW=${new:0:12} TICKWHEEL_GIT=$url"
echo "== ci-recipes: WORKLOAD=$workload; work in $tmp, builds in $build"

# The recipes: NAME.sh for each marked block, in document order.
mkdir "$tmp/recipes"
awk -v dir="$tmp/recipes" '
  /^<!-- recipe: [a-z0-9-]+ -->$/ { name = $3; want = 1; next }
  want && /^```sh$/ { file = dir "/" name ".sh"; print name; want = 0; inside = 1; printf "" > file; next }
  want { print "ci-recipes: the line after <!-- recipe: " name " --> is not ```sh" > "/dev/stderr"; exit 1 }
  inside && /^```$/ { inside = 0; close(file); next }
  inside { print > file }
' "$doc" >"$tmp/names" || die "cannot extract the recipes of $doc"
mapfile -t names <"$tmp/names"
[ ${#names[@]} -gt 0 ] || die "no <!-- recipe: NAME --> blocks in $doc"

# Substitutes the variables at the top of a recipe (the assignments and comments before its
# first command); fails when TICKWHEEL_GIT is not among them.
substitute() {
  local file=$1 top=1 line var seen=0
  while IFS= read -r line; do
    if [ $top = 1 ] && [[ $line =~ ^([A-Z_]+)= ]]; then
      var=${BASH_REMATCH[1]}
      case $var in
        TICKWHEEL_GIT) line="TICKWHEEL_GIT='$url'"; seen=1 ;;
        OLD) line="OLD='$old'" ;;
        NEW) line="NEW='$new'" ;;
        WORKLOAD) line="WORKLOAD='$workload'" ;;
      esac
    elif [ $top = 1 ] && ! [[ $line =~ ^[[:space:]]*(#|$) ]]; then
      top=0
    fi
    printf '%s\n' "$line"
  done <"$file"
  [ $seen = 1 ] || { echo "ci-recipes: $(basename "$file" .sh) defines no TICKWHEEL_GIT at its top" >&2; return 1; }
}

# The user's project, with a recorded trace of the load generator at NEW.
echo "== setup: the throwaway project, and the load generator at NEW for its trace"
cargo new --quiet --vcs git --name my-server "$tmp/project" || die "cargo new failed"
CARGO_TARGET_DIR=$build cargo install --quiet --locked --git "$url" --rev "$new" tickwheel-loadgen \
  --root "$tmp/tools" >"$tmp/setup.log" 2>&1 || { tail -30 "$tmp/setup.log"; die "installing NEW failed"; }
# shellcheck disable=SC2086 # the workload is flags, split on purpose
"$tmp/tools/bin/tickwheel-loadgen" run --timer hierarchical --repeat 1 $workload \
  --record "$tmp/trace" --out "$tmp/trace-report" >>"$tmp/setup.log" 2>&1 ||
  { tail -30 "$tmp/setup.log"; die "recording the trace failed"; }
mkdir "$tmp/project/ci"
cp "$tmp/trace/hierarchical.trace" "$tmp/project/ci/my-server.trace"
git -C "$tmp/project" add -A
git -C "$tmp/project" commit --quiet -m "a project that uses tickwheel, with a recorded trace"
git clone --quiet --bare "$tmp/project" "$tmp/origin.git"
branch=$(git -C "$tmp/project" symbolic-ref --short HEAD)

failed=()
summary=()
for name in "${names[@]}"; do
  echo "== recipe $name"
  clone=$tmp/run-$name
  log=$tmp/$name.log
  if ! substitute "$tmp/recipes/$name.sh" >"$tmp/$name.run.sh"; then
    failed+=("$name"); summary+=("$name: FAILED (its variables)"); continue
  fi
  git clone --quiet "$tmp/origin.git" "$clone"
  mkdir -p "$clone/target/tickwheel-gate"
  ln -s "$build" "$clone/target/tickwheel-gate/build"
  start=$(date +%s)
  set +e
  (cd "$clone" && bash -eu "$tmp/$name.run.sh") >"$log" 2>&1
  rc=$?
  set -e
  secs=$(($(date +%s) - start))
  # verdict lines: `verdict NAME: …` (simulated, diff) or the wall-clock paired table's rows
  verdicts=$(grep -cE '^verdict |^(hashed|hierarchical|heap|lazy-heap) .*(ok|REGRESSION|COUNTS DIFFER)$' "$log" || true)
  flagged=$(grep -cE 'REGRESSION|COUNTS DIFFER' "$log" || true)
  status=""
  if [ $rc -ne 0 ] && ! { [ $rc -eq 1 ] && [ "$flagged" -gt 0 ]; }; then
    status="exit $rc"
  fi
  dirty=$(git -C "$clone" status --porcelain)
  [ -z "$dirty" ] || status="${status:+$status; }left files in the repository: $(echo "$dirty" | tr '\n' ' ')"
  if [ -n "$status" ]; then
    tail -40 "$log"
    echo "ci-recipes: recipe $name FAILED: $status"
    failed+=("$name"); summary+=("$name: FAILED ($status)")
    continue
  fi
  grep -E '^(verdict |wrote |simulated cost|implementation |(hashed|hierarchical|heap|lazy-heap) )' "$log" |
    tail -12 || tail -5 "$log"
  note="exit $rc"
  [ $rc -eq 1 ] && note="exit 1: the gate flagged NEW against OLD"
  summary+=("$name: ok ($note, $verdicts verdict lines, ${secs}s)")
  if [ "$(git -C "$clone" rev-parse HEAD)" != "$(git -C "$tmp/origin.git" rev-parse "$branch")" ]; then
    git -C "$clone" push --quiet origin "HEAD:$branch"
  fi
done

# The GitHub Actions job runs the paired-simulated recipe's commands.
echo "== docs/ci/loadgen-gate.yml"
if [ -f "$tmp/recipes/paired-simulated.sh" ]; then
  sed 's/^[[:space:]]*//' "$yml" >"$tmp/yml-lines"
  missing=""
  while IFS= read -r line; do
    [[ $line =~ ^([A-Z_]+=|#|$) ]] && continue
    grep -Fxq -- "$(sed 's/^[[:space:]]*//' <<<"$line")" "$tmp/yml-lines" || missing+="  $line"$'\n'
  done <"$tmp/recipes/paired-simulated.sh"
  for var in TICKWHEEL_GIT OLD NEW WORKLOAD GATE; do
    grep -Eq "^$var:" "$tmp/yml-lines" || missing+="  the variable $var"$'\n'
  done
  grep -q 'apt-get install -y valgrind' "$yml" || missing+="  the valgrind install"$'\n'
  if python3 -c 'import yaml' 2>/dev/null; then
    python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$yml" 2>"$tmp/yaml.err" ||
      missing+="  valid YAML: $(tail -1 "$tmp/yaml.err")"$'\n'
  fi
  if [ -n "$missing" ]; then
    printf 'the job lacks what the paired-simulated recipe runs:\n%s' "$missing"
    failed+=(loadgen-gate.yml); summary+=("loadgen-gate.yml: FAILED")
  else
    summary+=("loadgen-gate.yml: ok (the paired-simulated recipe's commands)")
  fi
else
  failed+=(loadgen-gate.yml); summary+=("loadgen-gate.yml: FAILED (no paired-simulated recipe to check it against)")
fi

echo "== ci-recipes summary"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "ci-recipes: FAILED: ${failed[*]}"
  exit 1
fi
echo "ci-recipes: all ${#names[@]} recipes of docs/ci-gate.md ran as printed"
