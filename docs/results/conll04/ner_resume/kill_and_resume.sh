#!/usr/bin/env bash
# tacred ner train (CNN, CoNLL04, seed 1) twice at once: once unbroken, once SIGKILLed after 100 s and run again with
# the same options; then the two models compared byte for byte. Run from the repository root after `make install`;
# OUT (default /tmp/ner_resume) gets both output folders and their logs.
set -u
O="${OUT:-/tmp/ner_resume}"
mkdir -p "$O"
T=.venv/bin/tacred
A=(ner train --data ../shared/data/conll04 --seed 1)
"$T" "${A[@]}" --out "$O/unbroken" > "$O/unbroken.log" 2>&1 &
UNBROKEN=$!
"$T" "${A[@]}" --out "$O/killed" --checkpoint_minutes 0.5 > "$O/killed1.log" 2>&1 &
KILLED=$!
sleep 100
ls -la "$O/killed/checkpoint" >> "$O/killed1.log" 2>&1
kill -9 "$KILLED"; wait "$KILLED"
echo "killed at $(date +%T)" >> "$O/killed1.log"
"$T" "${A[@]}" --out "$O/killed" --checkpoint_minutes 0.5 > "$O/killed2.log" 2>&1
wait "$UNBROKEN"
cmp "$O/unbroken/model-best/ner/model" "$O/killed/model-best/ner/model" && echo SAME_BEST
cmp "$O/unbroken/model-last/ner/model" "$O/killed/model-last/ner/model" && echo SAME_LAST
