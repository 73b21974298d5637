#!/usr/bin/env bash
# Each variant of tacred/models/pair_scoring.py (VARIANT.diff, written against 6c96b4f's file, which later commits
# keep) timed against the checkout's own in one process on the recorded batches (contiguous_tail/ab_pair_scorer.py),
# one after another.
#
#     python docs/results/extraction/masked_low_rank/time_pair_scorer.py WORK record   # once: the batches
#     bash docs/results/extraction/eager_limits/run_ab.sh WORK [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
work=$1
rounds=${2:-3}
py=${PYTHON:-$repo/.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$repo/tacred/models/pair_scoring.py" "$tmp/base.py"
for variant in stacked_heads u_scale chunked:400 chunked:1000; do
    name=${variant%%:*}
    cp "$tmp/base.py" "$tmp/$name.py"
    patch -s "$tmp/$name.py" "$here/$name.diff"
    echo "## $variant"
    CHUNK_ROWS=${variant#*:} "$py" "$repo/docs/results/extraction/contiguous_tail/ab_pair_scorer.py" "$work" \
        "$tmp/base.py" "$tmp/$name.py" "$rounds" | grep -E '^(kbp37|demo):'
done
