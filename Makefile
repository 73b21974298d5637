# Everything runs inside a project-local virtual environment that `make install` builds from scratch.
VENV ?= .venv
PY := $(VENV)/bin/python
TACRED := $(VENV)/bin/tacred
# CPU build of torch first where there is no GPU, so nothing pulls a multi-GB CUDA wheel.
# Elsewhere set TORCH_INDEX=https://download.pytorch.org/whl/cpu to fetch the CPU build.
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
RUN ?= runs/demo

export HF_DATASETS_OFFLINE ?= 1
export HF_HUB_OFFLINE ?= 1
export WANDB_MODE ?= offline
export PYTHONHASHSEED ?= 0

.PHONY: install test test-fast demo lint bench clean

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

test: install
	$(PY) -m pytest -q

test-fast: install
	$(PY) -m pytest -q -m "not slow"

lint: install
	$(VENV)/bin/ruff check tacred tests benchmarks

demo: install
	test -f data/demo/train.json || $(TACRED) convert synthetic data/demo
	$(TACRED) fit --config configs/demo.yaml --run_dir $(RUN) --resume never
	$(TACRED) test --ckpt_path $(RUN)/checkpoints/best.ckpt

bench: install
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
