PORT ?= 8501
# Temporary alias; the README commands are python3.11 dev.py run|test.
run:
	python3.11 dev.py run --port $(PORT)
test:
	python3.11 dev.py test
bench:
	python3.11 dev.py bench
