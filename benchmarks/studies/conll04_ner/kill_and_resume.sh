#!/usr/bin/env bash
# tacred ner train (CNN, CoNLL04, seed 1) twice at once: once unbroken, once SIGKILLed after 100 s and run again with
# the same options; then spaCy's own loop (spacy.cli.train.train) on the unbroken run's config, and the three models
# compared byte for byte. Run from the repository root after `make install`:
#     bash benchmarks/studies/conll04_ner/kill_and_resume.sh
# OUT (default /tmp/ner_resume) gets the output folders and their logs, and `summary.txt` there is what
# docs/results/conll04/ner_resume/ keeps; DATA (default ../shared/data/conll04) is the release, KILL_AFTER (default
# 100) the seconds before the kill, PY (default .venv/bin/python) the interpreter.
set -u
O="${OUT:-/tmp/ner_resume}"
mkdir -p "$O"
PY="${PY:-.venv/bin/python}"
T=("$PY" -m tacred)
A=(ner train --data "${DATA:-../shared/data/conll04}" --seed 1)
"${T[@]}" "${A[@]}" --out "$O/unbroken" > "$O/unbroken.log" 2>&1 &
UNBROKEN=$!
"${T[@]}" "${A[@]}" --out "$O/killed" --checkpoint_minutes 0.5 > "$O/killed1.log" 2>&1 &
KILLED=$!
sleep "${KILL_AFTER:-100}"
{
  echo "checkpoint on disk at the kill (bytes):"
  du -sb "$O/killed/checkpoint" "$O/killed/checkpoint/state.pkl"
  kill -9 "$KILLED"; wait "$KILLED"
  echo "killed: exit status $?"
  "${T[@]}" "${A[@]}" --out "$O/killed" --checkpoint_minutes 0.5 > "$O/killed2.log" 2>&1
  grep "resuming" "$O/killed2.log"
  wait "$UNBROKEN"
  mkdir -p "$O/spacy" && cp "$O/unbroken/config.cfg" "$O/spacy/"
  "$PY" -c "import sys; from spacy.cli.train import train; train(sys.argv[1], sys.argv[2])" \
    "$O/spacy/config.cfg" "$O/spacy" > "$O/spacy.log" 2>&1
  for other in killed spacy; do
    for model in model-best model-last; do
      cmp -s "$O/unbroken/$model/ner/model" "$O/$other/$model/ner/model" && same=same || same=DIFFERENT
      echo "unbroken vs $other, $model/ner/model: $same"
    done
  done
  "$PY" - "$O" <<'PY'
import json, sys
for run in ("unbroken", "killed"):
    record = json.load(open(f"{sys.argv[1]}/{run}/training.json"))
    print(run, "seconds", record["seconds"], "resumed_at_step", record.get("resumed_at_step"),
          "dev ents_f", record["dev_scores"]["ents_f"])
PY
} > "$O/summary.txt" 2>&1
cat "$O/summary.txt"
