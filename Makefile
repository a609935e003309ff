# Two commands: `make run` (set up, start the app on localhost) and `make test`
# (set up, run every test). Both are idempotent: setup reinstalls only when the
# requirement files change.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501
ADDRESS ?= localhost

.PHONY: run test setup lint bench clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS)

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) benchmarks/rerun_cost.py

clean:
	rm -rf $(VENV) .pytest_cache screenshots
