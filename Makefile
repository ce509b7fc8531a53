# T3 hardware: RTL, cocotb benches, system model.  `make` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export AMARANTH_USE_YOSYS := builtin

.PHONY: help test install-check docs soak formal report sweep sensitivity peers dram-validation crosscheck crosscheck-rows characterize verilog lint bench mutate synth asic clean distclean iverilog cxx venv

help: ## Print the targets
	@echo "T3 hardware -- targets:"
	@grep -hE '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-12s %s\n", $$1, $$2}'

venv: $(STAMP) ## Create .venv and install the project into it

$(STAMP): pyproject.toml
	@if [ ! -x "$(PY)" ]; then \
	  $(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	      echo "installing python3-venv with apt-get"; \
	      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); \
	    else \
	      echo "error: '$(PYTHON) -m venv' failed: install python3-venv (sudo apt-get install -y python3-venv)"; exit 1; \
	    fi; }; \
	fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $@

iverilog: ## Install Icarus Verilog with apt-get if it is missing
	@command -v iverilog >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Icarus Verilog with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog >/dev/null; \
	  else \
	    echo "error: Icarus Verilog is missing: install it with 'sudo apt-get install -y iverilog'"; exit 1; \
	  fi; }

cxx: ## Install g++, make and perl with apt-get if missing (Verilator's trace runs build C++)
	@command -v g++ >/dev/null && command -v perl >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing g++, make and perl with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ make perl >/dev/null; \
	  else \
	    echo "warning: g++ is missing: the trace runs fall back to Icarus (slow); install g++ make perl"; \
	  fi; }

TEST_JOBS ?= auto
test: $(STAMP) iverilog cxx ## Run every test: unit tests and cocotb benches, one worker per core (SEED=, WAVES=1, SIM=, TEST_JOBS=)
	$(PY) -m pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

soak: $(STAMP) iverilog cxx ## 10^7 trace-checked cycles per block on every core, every cocotb matrix cell, the big ring regressions, the model's invariants on the row-aware DRAM, Llama-3 70B FC-2 through the 8-GPU RTL ring (SEED=)
	$(PY) -m tb.trace.soak --total 10000000
	T3_FULL_MATRIX=1 T3_SOAK=1 $(PY) -m pytest tb -k "not trace_"
	T3_INVARIANT_DRAM=rows $(PY) -m pytest -p no:xdist tests/test_invariants.py
	$(PY) -m tb.gemm_ring.production

formal: $(STAMP) ## Every formal proof: induction where it closes, else deep BMC; says which (sim_results/formal.json; ONLY=regex)
	$(PY) -m tb.formal.run $(if $(ONLY),--only '$(ONLY)')

report: $(STAMP) ## Sublayer study on the t3-paper preset: table + CSV/JSON/MD/PNG in sim_results/
	$(PY) -m system_model report --preset t3-paper --out sim_results

sweep: $(STAMP) ## Sweep link bandwidth, HBM bandwidth and TP (sim_results/sweep_t3-paper.csv)
	$(PY) -m system_model sweep --preset t3-paper --out sim_results

sensitivity: $(STAMP) ## Each calibrated value moved +-25%: how the headline figures move (sim_results/sensitivity_t3-paper.md)
	$(PY) -m system_model sensitivity --preset t3-paper --out sim_results --jobs 2

peers: $(STAMP) ## T3 against Flux, async-TP, FlashOverlap, Triton-distributed, DMA collectives and NVLS on today's GPUs, and in serving (sim_results/peers*.md)
	$(PY) -m system_model peers --out sim_results --sensitivity

dram-validation: $(STAMP) ## The row-aware DRAM channel against closed forms, published HBM figures, and the paper's ablation (sim_results/dram_validation.md)
	$(PY) -m system_model.studies.dram_validation --out sim_results

crosscheck: $(STAMP) iverilog cxx ## The model against the RTL ring running a staged GEMM + RS, full sizes (sim_results/crosscheck.md)
	$(PY) -m system_model crosscheck --rtl --size full --out sim_results

crosscheck-rows: $(STAMP) iverilog cxx ## The same behind the harness's DRAM-like memory (sim_results/crosscheck_rows.md; exits 1 while the model misses)
	$(PY) -m system_model crosscheck --rtl --rows --size full --out sim_results

characterize: $(STAMP) iverilog ## Measure the RTL timing into sim_results/rtl_timing.json (seconds)
	$(PY) -m tb.characterize

CONFIG ?= rtl/flow/paper.toml
verilog: $(STAMP) ## Write build/verilog/<block>.v and its port map for every RTL block at the paper's sizes (CONFIG=file for others)
	$(PY) -m rtl.flow.generate --out build/verilog --config $(CONFIG)

lint: $(STAMP) ## ruff on all Python; verilator --lint-only -Wall on every generated Verilog
	$(PY) -m ruff check .
	$(PY) -m rtl.flow.lint

synth: $(STAMP) ## yosys + nextpnr (PyPI, WebAssembly): LUTs, FFs, BRAMs, Fmax -> sim_results/synth.json, .md (ONLY=regex)
	$(PY) -m pip install --quiet -e '.[synth]'
	$(PY) -m rtl.flow.synth --startup $(if $(ONLY),--only '$(ONLY)')

# The SKY130 HD typical-corner Liberty file (SkyWater PDK, Apache-2.0). This path is only a
# default: pass SKY130_LIB=/path/to/sky130_fd_sc_hd__tt_025C_1v80.lib(.gz), e.g. from the PDK
# managers volare or ciel (libs.ref/sky130_fd_sc_hd/lib/).
SKY130_LIB ?= ../shared/pdk/sky130hd_tt.lib.gz

asic: $(STAMP) ## SKY130 area (tables as flip-flops and as SRAM macros), pre-layout clock, per-GPU overhead -> sim_results/asic.json, .md (SKY130_LIB=, ONLY=regex)
	@$(PY) -m rtl.flow.asic --validate-only --lib '$(SKY130_LIB)' $(if $(ONLY),--only '$(ONLY)')
	@missing=""; for t in yosys yosys-abc sta; do command -v $$t >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing yosys, berkeley-abc and opensta with apt-get (the clock estimate)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq yosys berkeley-abc opensta >/dev/null; \
	  else \
	    echo "error: the clock estimate needs Debian's yosys, berkeley-abc and opensta: 'sudo apt-get install -y yosys berkeley-abc opensta'"; exit 1; \
	  fi; fi
	$(PY) -m rtl.flow.asic --lib '$(SKY130_LIB)' $(if $(ONLY),--only '$(ONLY)')

bench: $(STAMP) iverilog ## Speed of the benches (Icarus vs Verilator), report, sweep, verilog, test: sim_results/bench.json
	$(PY) -m tb.bench

mutate: $(STAMP) iverilog cxx ## Mutation check: realistic RTL bugs, each must fail its tests (sim_results/mutation.md; ONLY=regex; its time is in the table)
	$(PY) -m tb.mutate --baseline $(if $(ONLY),--only '$(ONLY)')

docs: $(STAMP) ## The documentation site (MkDocs; warnings are errors; references generated from the code) into build/site/
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

install-check: ## A model-only install in a fresh venv outside the repository: size, no leaks, `t3-model report` from another folder (CI runs it)
	$(PY) -m tb.install_check

clean: ## Remove build outputs (build/, sim_build/, caches); keeps .venv
	rm -rf build sim_build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean ## Also remove .venv
	rm -rf $(VENV) *.egg-info
