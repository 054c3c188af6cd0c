# toolfit: `make test` is the one test command (CI runs it through .ci/run).
.PHONY: test test-unit test-judges build kinds bench-engine

build:
	cargo build --release

# Unit, property and corpus tests, then acceptance against five llama.cpp versions' own converters
# (judges built from the llama-cpp-python sdists on first use, cached in ~/.cache/toolfit/judges).
test: build
	cargo test --release
	python3 tests/llama_judges.py

test-unit:
	cargo test --release

test-judges: build
	python3 tests/llama_judges.py

# The transformation table in the README is generated from the engine's enum.
kinds: build
	./target/release/toolfit kinds

# Engine throughput per catalog beside serde_json and mcp-schema-normalize (prints a table; no assertions).
bench-engine:
	python3 tests/bench_engine.py
