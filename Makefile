# Everything runs inside a project-local virtual environment that `make install` builds from scratch.
VENV ?= .venv
PY := $(VENV)/bin/python
TACRED := $(VENV)/bin/tacred
# torch first. On Linux PyPI's default torch wheel is the CUDA build (several GB): where there is no GPU
# (no nvidia-smi), set TORCH_INDEX=https://download.pytorch.org/whl/cpu to fetch the CPU build instead, unless a
# local wheel cache (pip's find-links, as on this project's machines) already provides it.
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
RUN ?= runs/demo
# Test processes (pytest-xdist); a test file stays on one process, so its trained fixtures are built once, and files
# go out in the order tests/conftest.py gives them (the longest of the last run first, from pytest's cache).
TEST_WORKERS ?= 2

export HF_DATASETS_OFFLINE ?= 1
export HF_HUB_OFFLINE ?= 1
export WANDB_MODE ?= offline
export PYTHONHASHSEED ?= 0

.PHONY: install test test-slow test-all test-scale demo docs lint bench clean semeval-data tune-semeval tune-semeval-lstm-self-attention \
	results-semeval results-semeval-glove kbp37-data results-kbp37 shipped-models conll04-data results-conll04

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	if command -v nvidia-smi >/dev/null 2>&1; then \
	  $(PY) -m pip install -q "$(TORCH_SPEC)"; \
	else \
	  $(PY) -m pip install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),); \
	fi
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

# Three tiers, each a pytest marker selection. `make test` (the README's) is the quick one: everything that neither
# trains for more than a few seconds, nor starts a process (tacred, Python, a tool) or a server (marked `slow`), nor launches a
# scale-out job (marked `scale`). CI (.ci/run) runs all three; `make test-all` does the same here.
test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow and not scale"

# the end-to-end tier: real trainings, the CLI in subprocesses, servers, notebooks, the benchmarks' smoke runs
test-slow: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "slow and not scale"

test-all: test test-slow test-scale

# The documented scale-out launches (docs/distributed.md): torchrun and a SLURM job as two nodes on this machine,
# two tune workers on a throwaway PostgreSQL server, one killed mid-trial (skipped where PostgreSQL is not installed;
# .ci/run installs it), and `tacred extract --engine ray` on a two-node Ray cluster whose worker node is killed
# mid-run. Kept out of `make test` and `make test-slow` (minutes of 2 cores each); CI runs all three tiers.
test-scale: install $(VENV)/.installed-ray
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m scale

# Ray (tacred[ray], for the two-node `tacred extract --engine ray` test) is heavy: installed for test-scale only
$(VENV)/.installed-ray: $(VENV)/.installed
	$(PY) -m pip install -q -e ".[ray]"
	touch $@

# The documentation site (mkdocs.yml over docs/) into site/; a warning (a broken link, a missing page) fails it.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

lint: install
	$(VENV)/bin/ruff check tacred tests benchmarks

demo: install
	test -f data/demo/train.json || $(TACRED) convert synthetic data/demo
	$(TACRED) fit --config configs/demo.yaml --run_dir $(RUN) --resume never
	$(TACRED) test --ckpt_path $(RUN)/checkpoints/best.ckpt

# Issue 11's SemEval experiments (hours on 2 cores): every step is resumable and skips finished work, so run the
# same target again to continue. Results are written as data under docs/results/semeval/ (commit them).
SEMEVAL_SRC ?= ../shared/data/semeval2010_task8
TRIALS ?= 24
semeval-data: install
	test -f data/semeval/train.json || $(TACRED) convert semeval2010 $(SEMEVAL_SRC) data/semeval

# Two processes at a time (2 cores, 1 thread each). UNTIL='02:30' (anything `date -d` reads): no trial or run starts
# after that time, so none is cut off when the machine goes away (a cut-off one starts over on a fresh clone: its
# checkpoints are not in git); the same target later goes on.
UNTIL ?=
until = $(if $(UNTIL),--timeout $$(( $$(date -d '$(UNTIL)' +%s) - $$(date +%s) )),)

# The SemEval runs in docs/results/ trained on ATen's AVX2 kernels. Where torch picks AVX-512 kernels they round
# differently and the same seed trains to other numbers, so on x86-64 these targets ask for AVX2 and a re-run
# reproduces the stored runs (ATEN_CPU_CAPABILITY=avx512 lets torch use AVX-512; result.json records which ran).
ifeq ($(shell uname -m),x86_64)
tune-semeval tune-semeval-lstm-self-attention results-semeval results-semeval-glove: export ATEN_CPU_CAPABILITY ?= avx2
endif

# the paper's network beside PA-LSTM, each study's three best trials re-checked with seeds 2 and 3, then the paper's
# 60-epoch follow-up and its re-check (docs/results/semeval/recheck/). The third space, semeval_lstm_self_attention,
# was stopped after 3 trials (docs/results/semeval/README.md; `make tune-semeval-lstm-self-attention` goes on).
tune-semeval: semeval-data
	$(call tune,paper,$(TRIALS),3) & $(call tune,pa_lstm,$(TRIALS),3) & wait
	$(call tune,paper_60_epochs,1,1)

tune-semeval-lstm-self-attention: semeval-data
	$(call tune,lstm_self_attention,$(TRIALS),0) & $(call tune,lstm_self_attention,$(TRIALS),0) & wait

# $(call tune,SPACE,TRIALS,RECHECK)
tune = nice $(TACRED) tune --space configs/tune/semeval_$(1).yaml --n_trials $(2) --recheck $(3) \
	  --study_dir docs/results/semeval/tune_$(1) --trials_dir runs/tune/$(1) $(until)

# five seeds of each recipe, then the ablation on the paper's recipe; two processes share each sweep (claim.json)
results-semeval: semeval-data
	@test -f configs/semeval/paper.yaml -a -f configs/semeval/pa_lstm.yaml || { echo "make results-semeval: \
	  configs/semeval/{paper,pa_lstm}.yaml come from the finished studies (make tune-semeval; docs/results/semeval/README.md)"; exit 2; }
	$(call twice,$(FIVE_SEEDS))
	$(call twice,$(ABLATION))

FIVE_SEEDS = $(TACRED) ablate --config configs/semeval.yaml --variants configs/semeval/paper.yaml \
	  configs/semeval/pa_lstm.yaml $(if $(wildcard configs/semeval/best.yaml),configs/semeval/best.yaml,) \
	  --seeds 1 2 3 4 5 --checkpoint last --reference paper --out docs/results/semeval --runs_dir runs/results/semeval \
	  $(until) --extra --num_threads 1
ABLATION = $(TACRED) ablate --config configs/semeval.yaml configs/semeval/paper.yaml --variants_dir configs/ablations \
	  --seeds 1 2 3 --checkpoint last --published --out docs/results/semeval/ablation --runs_dir runs/results/ablation $(until) \
	  --extra --num_threads 1
# the same command in two processes; fails if either fails
twice = nice $(1) & first=$$!; nice $(1); second=$$?; wait $$first && exit $$second

# Issue 31: the same study with the glove.6B 50-d vectors and all-MiniLM-L6-v2 (docs/results/semeval_glove/README.md,
# steps 1-5; each step skips finished runs, so the same target continues where it stopped).
GLOVE_OUT = docs/results/semeval_glove
results-semeval-glove: semeval-data
	nice $(TACRED) ablate --config configs/semeval.yaml configs/semeval/paper.yaml configs/semeval/glove.yaml \
	  --variants configs/semeval/glove_layouts/*.yaml --reference pos_ner_35 --seeds 1 2 --checkpoint last \
	  --out $(GLOVE_OUT)/layout --runs_dir runs/results/glove_layout $(until) --extra --num_threads 1
	nice $(TACRED) ablate --config configs/semeval.yaml configs/semeval/transformer.yaml \
	  --variants configs/semeval/transformer_lr/*.yaml --reference lr_1e_4 --seeds 1 --checkpoint last \
	  --out $(GLOVE_OUT)/transformer_lr --runs_dir runs/results/transformer_lr $(until)
	nice $(TACRED) ablate --config configs/semeval.yaml configs/semeval/transformer.yaml \
	  --variants configs/semeval/transformer_epochs/epochs_10.yaml --seeds 1 --checkpoint last \
	  --out $(GLOVE_OUT)/transformer_epochs --runs_dir runs/results/transformer_epochs $(until)
	$(call tune_glove,pa_lstm) & $(call tune_glove,paper) & wait
	@test -f configs/semeval/glove/paper.yaml -a -f configs/semeval/glove/pa_lstm.yaml || { echo "make \
	  results-semeval-glove: configs/semeval/glove/{paper,pa_lstm}.yaml come from the finished studies \
	  ($(GLOVE_OUT)/README.md)"; exit 2; }
	$(call twice,$(FIVE_SEEDS_GLOVE))
	$(TACRED) compare $(GLOVE_OUT)/comparison.yaml --readme README.md
	$(call twice,$(ABLATION_GLOVE))

FIVE_SEEDS_GLOVE = $(TACRED) ablate --config configs/semeval.yaml --variants configs/semeval/glove/paper.yaml \
	  configs/semeval/glove/pa_lstm.yaml $(wildcard configs/semeval/glove/best.yaml) configs/semeval/transformer.yaml \
	  --seeds 1 2 3 4 5 --checkpoint last --reference paper --out $(GLOVE_OUT)/five_seeds --runs_dir runs/results/semeval_glove \
	  $(until)
ABLATION_GLOVE = $(TACRED) ablate --config configs/semeval.yaml configs/semeval/glove/paper.yaml \
	  --variants_dir configs/ablations --seeds 1 2 3 --checkpoint last --published --out $(GLOVE_OUT)/ablation \
	  --runs_dir runs/results/glove_ablation $(until) --extra --num_threads 1

# $(call tune_glove,SPACE)
tune_glove = nice $(TACRED) tune --space configs/tune/semeval_glove_$(1).yaml --n_trials $(TRIALS) --recheck 3 \
	  --study_dir $(GLOVE_OUT)/tune_$(1) --trials_dir runs/tune/glove_$(1) $(until)

# Issue 40: KBP37, TACRED's KBP slot relations on public text (docs/results/kbp37/README.md). Each step skips finished
# runs, so the same target continues where it stopped. The GloVe networks train on AVX2 kernels (as the SemEval runs,
# so any x86-64 machine reproduces them); the transformers in bf16 on the default kernels (AVX-512 where present).
KBP37_SRC ?= ../shared/data/kbp37
KBP37_OUT = docs/results/kbp37
AVX2 = env $(if $(filter x86_64,$(shell uname -m)),ATEN_CPU_CAPABILITY=avx2,)
kbp37-data: install
	test -f data/kbp37/train.json || $(TACRED) convert kbp37 $(KBP37_SRC) data/kbp37

results-kbp37: kbp37-data semeval-data
	$(call twice,$(AVX2) $(call kbp37_recheck,paper))
	$(call twice,$(AVX2) $(call kbp37_recheck,pa_lstm))
	nice $(TACRED) ablate --config configs/semeval.yaml configs/semeval/transformer.yaml \
	  --variants configs/semeval/transformer_bf16/bf16.yaml --seeds 1 --checkpoint last \
	  --out $(GLOVE_OUT)/transformer_bf16 --runs_dir runs/results/transformer_bf16 $(until)
	nice $(TACRED) ablate --config configs/kbp37.yaml --variants configs/kbp37/transformer.yaml --seeds 1 2 3 4 5 \
	  --checkpoint last --reference transformer --out $(KBP37_OUT)/five_seeds --runs_dir runs/results/kbp37_five_seeds $(until)
	nice $(TACRED) ablate --config configs/kbp37.yaml configs/kbp37/transformer.yaml \
	  --variants configs/kbp37/transformer_epochs/epochs_10.yaml --seeds 1 --checkpoint last \
	  --out $(KBP37_OUT)/transformer_epochs --runs_dir runs/results/kbp37_transformer_epochs $(until)
	$(call twice,$(AVX2) $(TACRED) ablate --config configs/kbp37.yaml configs/semeval/glove/paper.yaml \
	  --variants configs/kbp37/paper.yaml --seeds 1 2 3 4 5 --checkpoint last --reference transformer \
	  --out $(KBP37_OUT)/five_seeds --runs_dir runs/results/kbp37_five_seeds $(until) --extra --num_threads 1)
	$(call twice,$(AVX2) $(TACRED) ablate --config configs/kbp37.yaml configs/semeval/glove/pa_lstm.yaml \
	  --variants configs/kbp37/pa_lstm.yaml --seeds 1 2 3 4 5 --checkpoint last --reference transformer \
	  --out $(KBP37_OUT)/five_seeds --runs_dir runs/results/kbp37_five_seeds $(until) --extra --num_threads 1)
	$(TACRED) pretrained install mpnet --if_missing
	nice $(TACRED) ablate --config configs/kbp37.yaml --variants configs/kbp37/mpnet.yaml --seeds 1 2 3 4 5 \
	  --checkpoint last --reference transformer --out $(KBP37_OUT)/five_seeds --runs_dir runs/results/kbp37_five_seeds $(until)
	nice $(TACRED) ablate --config configs/kbp37.yaml configs/kbp37/mpnet.yaml \
	  --variants configs/kbp37/mpnet_epochs/epochs_5.yaml --seeds 1 2 3 4 5 --checkpoint last \
	  --out $(KBP37_OUT)/mpnet_epochs --runs_dir runs/results/kbp37_mpnet_epochs $(until)
	nice $(TACRED) ablate --config configs/semeval.yaml --variants configs/semeval/mpnet.yaml --seeds 1 2 3 \
	  --checkpoint last --reference paper --out $(GLOVE_OUT)/five_seeds --runs_dir runs/results/semeval_glove $(until)
	nice $(TACRED) ablate --config configs/semeval.yaml configs/semeval/mpnet.yaml \
	  --variants configs/semeval/mpnet_epochs/epochs_10.yaml --seeds 1 2 3 --checkpoint last \
	  --out $(GLOVE_OUT)/mpnet_epochs --runs_dir runs/results/semeval_mpnet_epochs $(until)
	$(TACRED) compare $(GLOVE_OUT)/comparison.yaml --readme README.md
	$(TACRED) compare $(KBP37_OUT)/comparison.yaml --readme README.md
	$(AVX2) nice $(TACRED) tune --space configs/tune/kbp37_paper.yaml --n_trials $(TRIALS) --recheck 3 \
	  --study_dir $(KBP37_OUT)/tune_paper --trials_dir runs/tune/kbp37_paper $(until)

# $(call kbp37_recheck,RECIPE): configs/semeval/glove/RECIPE.yaml and two alternatives on KBP37's dev
kbp37_recheck = $(TACRED) ablate --config configs/kbp37.yaml configs/semeval/glove/$(1).yaml \
	  --variants configs/kbp37/recheck/*.yaml --reference semeval_recipe --seeds 1 2 --checkpoint last \
	  --out $(KBP37_OUT)/recheck_$(1) --runs_dir runs/results/kbp37_recheck_$(1) $(until) --extra --num_threads 1

# Issue 54: CoNLL04 end to end (docs/conll04.md; README's CoNLL04 table). The relation models over their seeds (the
# paper's network on AVX2 kernels, two processes; MiniLM and MPNet in fp32), then `tacred end-to-end`: a NER trained on
# CoNLL04's entities per seed (the CNN, or the spec's MPNet NER for a row that names it), tacred extract on the raw test
# sentences, the strict scores and the table. Every step skips what is finished, so the same target continues where it
# stopped (UNTIL=TIME: start nothing after TIME); a seed whose record is missing and whose checkpoint is gone is listed
# by tacred end-to-end, to be retrained into runs/results/conll04 (docs/conll04.md, "Five seeds, end to end").
CONLL04_SRC ?= ../shared/data/conll04
CONLL04_OUT = docs/results/conll04
conll04-data: install
	test -f data/conll04/train.json || $(TACRED) convert conll04 $(CONLL04_SRC) data/conll04
	# the joint model reads the release itself (SpERT's layout); a copy beside the converted pairs
	test -f data/conll04_spert/conll04_types.json || (mkdir -p data/conll04_spert && \
	  cp $(CONLL04_SRC)/conll04_train.json $(CONLL04_SRC)/conll04_dev.json $(CONLL04_SRC)/conll04_test.json \
	    $(CONLL04_SRC)/conll04_types.json data/conll04_spert/)

results-conll04: conll04-data
	$(call twice,$(AVX2) $(TACRED) ablate --config configs/conll04.yaml configs/semeval/glove/paper.yaml \
	  --variants configs/conll04/paper.yaml --seeds 1 2 3 4 5 --checkpoint last --reference paper \
	  --out $(CONLL04_OUT)/five_seeds --runs_dir runs/results/conll04 $(until) --extra --num_threads 1)
	$(AVX2) nice $(TACRED) end-to-end $(CONLL04_OUT)/end_to_end.yaml --only paper $(until)
	nice $(TACRED) ablate --config configs/conll04.yaml --variants configs/conll04/transformer.yaml \
	  --seeds 1 2 3 4 5 --checkpoint last --reference paper --out $(CONLL04_OUT)/five_seeds \
	  --runs_dir runs/results/conll04 $(until)
	$(TACRED) pretrained install mpnet --if_missing
# MPNet: seed 1 in fp32, seeds 2 to 4 with bf16 autocast (about 2x faster on a CPU with AMX; the CNN-NER row takes
# seeds 1-3, the MPNet-NER row the bf16 seeds 2-4, see docs/results/conll04/end_to_end.yaml)
	nice $(TACRED) ablate --config configs/conll04.yaml --variants configs/conll04/mpnet.yaml --seeds 1 \
	  --checkpoint last --reference paper --out $(CONLL04_OUT)/five_seeds --runs_dir runs/results/conll04 $(until)
	nice $(TACRED) ablate --config configs/conll04.yaml configs/conll04/mpnet.yaml --variants configs/conll04/mpnet_bf16.yaml \
	  --seeds 2 3 4 --checkpoint last --reference paper --out $(CONLL04_OUT)/five_seeds --runs_dir runs/results/conll04 $(until)
# MiniLM again with bf16 autocast: the relation models of the rows with an MPNet NER
	nice $(TACRED) ablate --config configs/conll04.yaml configs/conll04/transformer.yaml \
	  --variants configs/conll04/transformer_bf16.yaml --seeds 1 2 3 4 5 --checkpoint last --reference paper \
	  --out $(CONLL04_OUT)/five_seeds --runs_dir runs/results/conll04 $(until)
# the sweeps share one folder; each renders its own rows, so the tables are rendered again with all of them
	$(TACRED) ablate --out $(CONLL04_OUT)/five_seeds --table_only --reference paper
	nice $(TACRED) end-to-end $(CONLL04_OUT)/end_to_end.yaml --readme README.md $(until)

# Issue 55: the model shipped inside the package (tacred/shipped_models/kbp37/, `tacred models`, docs/models.md): the
# paper's network on KBP37 with the recipe of the KBP37 table (five_seeds/paper, seed 1, last epoch; about 20 min on
# one core), then its compact folder, threshold, scores and card. A finished run is not trained again.
SHIPPED_RUN ?= runs/shipped/kbp37
shipped-models: kbp37-data
	$(AVX2) nice $(TACRED) fit --config configs/kbp37.yaml --config configs/semeval/glove/paper.yaml \
	  --config configs/kbp37/paper.yaml --seed_everything 1 --run_dir $(SHIPPED_RUN) --resume auto --num_threads 1
	$(AVX2) $(TACRED) models build kbp37 --ckpt_path $(SHIPPED_RUN)/checkpoints/last.ckpt --data_dir data/kbp37

bench: install
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs site .pytest_cache .ruff_cache
