# toolfit: `make test` is the one test command (CI runs it through .ci/run).
.PHONY: test test-unit test-judges build kinds

build:
	cargo build --release

# Unit, property and corpus tests. The acceptance run against five llama.cpp versions' own converters
# (`make test-judges`) is not yet part of CI: its runner still has a parse bug to fix (see CHANGELOG).
test: build
	cargo test --release

test-unit:
	cargo test --release

test-judges: build
	python3 tests/llama_judges.py

# The transformation table in the README is generated from the engine's enum.
kinds: build
	./target/release/toolfit kinds
