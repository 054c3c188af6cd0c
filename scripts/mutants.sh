#!/usr/bin/env bash
# Mutation testing, one module at a time (make mutants; not in make test).
#
#   scripts/mutants.sh [FILE ...]        run cargo-mutants over each FILE (default: MUTANTS_FILES)
#   scripts/mutants.sh --iterate FILE..  again, but only the mutants not caught last time (and new ones)
#   scripts/mutants.sh --table           print the per-module table of the results on disk
#
# Each module's results go to mutants.out/<module>/mutants.out/ (caught.txt, missed.txt, unviable.txt,
# timeout.txt), so a run stopped part-way keeps the modules it finished and the table shows which.
# Each mutant builds with the `mutants` profile (Cargo.toml: opt-level 1, incremental; about 10 s a
# mutant against 70 s with release's LTO) and runs every unit and integration test of the crate.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=mutants.out
DEFAULT_FILES="src/schema/validate.rs src/filter/response/flow.rs src/filter/response/reply.rs
src/filter/response/stream.rs src/filter/response/tally.rs src/filter/encoding.rs src/api/names.rs
src/schema/pattern.rs src/schema/passes/unsupported.rs src/schema/passes/explicit_types.rs
src/schema/passes/refs.rs"

slug() { local s=${1#src/}; s=${s%.rs}; echo "${s//\//-}"; }

# lines in a result file (0 when absent; grep -c prints 0 itself for an empty one)
count() { if [ -f "$1" ]; then grep -c . "$1"; else echo 0; fi; }

table() {
    local total_c=0 total_m=0 total_u=0 total_t=0 rows=0
    printf '%-34s %7s %7s %7s %7s %s\n' module mutants caught missed unviable timeout
    for f in ${MUTANTS_FILES:-$DEFAULT_FILES}; do
        local d="$OUT/$(slug "$f")/mutants.out"
        if [ ! -f "$d/outcomes.json" ]; then
            printf '%-34s %s\n' "$f" "not run"
            continue
        fi
        local c m u t
        c=$(count "$d/caught.txt"); m=$(count "$d/missed.txt")
        u=$(count "$d/unviable.txt"); t=$(count "$d/timeout.txt")
        printf '%-34s %7d %7d %7d %7d %7d\n' "$f" $((c + m + u + t)) "$c" "$m" "$u" "$t"
        total_c=$((total_c + c)); total_m=$((total_m + m)); total_u=$((total_u + u)); total_t=$((total_t + t))
        rows=$((rows + 1))
    done
    printf '%-34s %7d %7d %7d %7d %7d\n' "all ($rows run)" $((total_c + total_m + total_u + total_t)) \
        "$total_c" "$total_m" "$total_u" "$total_t"
}

if [ "${1:-}" = "--table" ]; then
    table
    exit 0
fi

iterate=()
if [ "${1:-}" = "--iterate" ]; then
    iterate=(--iterate)
    shift
fi
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants || exit 1
files=("$@")
[ ${#files[@]} -gt 0 ] || read -r -a files <<<"$(echo ${MUTANTS_FILES:-$DEFAULT_FILES})"
status=0
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "mutants: no such file: $f" >&2; exit 1; }
    dir="$OUT/$(slug "$f")"
    mkdir -p "$dir"
    echo "== $f"
    # Exit 2 means mutants were missed (that is the result, not a failure of the run); 3 timeouts.
    cargo mutants --package toolfit --no-shuffle --profile mutants --timeout 60 --build-timeout 600 \
        "${iterate[@]}" --file "$f" --output "$dir"
    rc=$?
    case $rc in 0 | 2 | 3) ;; *) echo "mutants: cargo mutants failed on $f (exit $rc)" >&2; status=1 ;; esac
done
MUTANTS_FILES="${files[*]}" table
exit $status
