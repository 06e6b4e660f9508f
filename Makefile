# Transformer and Grassmann language models in C.
#   make            build the programs into bin/
#   make demo       the main job: deps, build, corpus, train, eval, sample
#   make test       every test (unit, gradient checks, CLI, PyTorch parity)
#   make test-mixers the contract suite: every registered mixer's checks, at every level
#   make bench      throughput and memory benchmarks (BENCH_ARGS=--quick ...)
#   make data       fetch and prepare the default corpus (Moby Dick)
#   make data-large fetch and prepare a word-level corpus (State of the Union addresses, BPE 8192)
#   make compare    architectures of matched size, seeds, token and time budgets (COMPARE_ARGS=...)
#   make paper      the Grassmann paper's configuration, pre- and post-norm (PAPER_ARGS=...)
#   make probe      MQAR and copy recall probes per architecture (PROBE_ARGS=...)
#   make asan       unit and CLI tests under AddressSanitizer + UBSan
#   make release    programs for any x86-64 into bin-release/, kernels at each CPU's best level
#   make pack       the release, its unit tests and libraries in one folder for another machine (PACK=.portable)
#   make BLAS=blis ...       any of these with BLIS instead of OpenBLAS (src/blas/backend.h)
#   make arm64-test the ARM64 build (cross-compiled), its unit tests and a CLI suite under qemu-user
CC      ?= cc
# The machine the compiler builds for, as Debian's multiarch names it
# (x86_64-linux-gnu, aarch64-linux-gnu): where its libraries live. A
# compiler for another machine than this one (CC=aarch64-linux-gnu-gcc)
# cross-builds, for that architecture's baseline rather than -march=native.
TRIPLET := $(shell $(CC) -dumpmachine)
ARCH    := $(firstword $(subst -, ,$(TRIPLET)))
ifeq ($(ARCH),$(shell uname -m))
OPT     ?= -O3 -march=native
else
OPT     ?= -O3
endif
CFLAGS  += -std=c11 $(OPT) -fno-trapping-math -fno-math-errno -ffp-contract=fast -fopenmp -Wall -Wextra -Wno-format-truncation -D_DEFAULT_SOURCE -D_GNU_SOURCE \
           -Iinclude -Isrc -I/usr/include/stb $(EXTRA_CFLAGS)
# Open MPI for data-parallel bin/train (src/runtime/dist.c); its wrapper compiler
# knows the include and library paths. Optional (MPI=0, or no mpicc that
# builds for $(CC)'s machine): then the programs run as one process and
# refuse an mpirun job of more.
ifeq ($(origin MPI),undefined)
MPI     := $(if $(filter $(TRIPLET),$(shell mpicc -dumpmachine 2>/dev/null)),1,0)
endif
ifeq ($(MPI),1)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
endif
# oneDNN: the bf16 matrix products (lm/bf16.h). Optional (ONEDNN=0, or no
# oneDNN that $(CC) links, as on ARM64): then --precision bf16 is refused as
# on a CPU without AVX512_BF16.
ifeq ($(origin ONEDNN),undefined)
ONEDNN  := $(shell echo 'int main(void) { return dnnl_version()->major < 0; }' | \
             $(CC) -include oneapi/dnnl/dnnl.h -x c - -ldnnl -o /dev/null 2>/dev/null && echo 1 || echo 0)
endif
# MPI's flags reach src/runtime/dist.c alone (below): the one file that reads them.
FEATURE_CFLAGS := -DLM_HAVE_ONEDNN=$(ONEDNN)
MPI_FEATURE_CFLAGS := -DLM_HAVE_MPI=$(MPI) $(MPI_CFLAGS)
CFLAGS  += $(FEATURE_CFLAGS)
LDLIBS  += $(if $(filter 1,$(ONEDNN)),-ldnnl) -lpcre2-8 -ljansson -lz -lm $(MPI_LIBS)
BUILD   ?= build
BIN     ?= bin

# The BLAS library every product goes through: openblas or blis. The default
# (this line) is the faster one as measured (docs/performance.md#openblas-or-blis):
# equal on large products, but OpenBLAS keeps its speed on the small row blocks
# and tiles a product is cut into for many threads, where BLIS's packing
# dominates. Each library's objects live in their own directories (OUT:
# build/ for BLIS, build-openblas/ for OpenBLAS, build-asan-openblas/ ...),
# so switching never links one library's objects against the other; the
# programs in $(BIN) are relinked when the library changes.
BLAS    ?= openblas
ifeq ($(BLAS),blis)
BLAS_CFLAGS :=
BLAS_LIBS   := -lblis
BLAS_SUFFIX :=
else ifeq ($(BLAS),openblas)
# Debian's OpenMP build (libopenblas-openmp-dev), named by its path rather than
# through libblas.so.3, which the alternatives system may point anywhere.
OPENBLAS_DIR := /usr/lib/$(TRIPLET)/openblas-openmp
BLAS_CFLAGS  := -I/usr/include/$(TRIPLET)/openblas-openmp
BLAS_LIBS    := -L$(OPENBLAS_DIR) -Wl,-rpath,$(OPENBLAS_DIR) -lopenblas
BLAS_SUFFIX  := -openblas
else
$(error BLAS=$(BLAS): the BLAS library must be blis or openblas)
endif
CFLAGS  += $(BLAS_CFLAGS)
LDLIBS  := $(BLAS_LIBS) $(LDLIBS)
OUT     := $(BUILD)$(BLAS_SUFFIX)
BLAS_STAMP := $(BIN)/.blas-library
# The test scripts run the programs in $(BIN) (make BLAS=blis BIN=bin-blis test).
export BIN

# Our own kernels: each a template, src/WING/NAME_kernel.h, compiled once per
# instruction-set level (lm/cpu.h's levels) into $(OUT)/src/WING/NAME.LEVEL.o
# with -DLM_LEVEL=LEVEL (src/runtime/level.h) and its level's flags whatever
# OPT's -march says, and chosen at run time by CPUID (capped by LM_MAX_ISA):
# so a build runs on any x86-64 its OPT allows (OPT="-O3 -march=x86-64" for
# a release: every x86-64) and at its best level on each, and any machine
# tests the levels below its own (make test). The portable level drops AVX
# (on a native build it keeps the SSE4 the build machine has); AVX2 drops
# AVX-512, so no EVEX encoding slips in where the build machine has it.
# On ARM64 the levels are portable and neon: NEON (with its fused
# multiply-add) is in every ARM64 CPU, so neon needs no flags, and the
# portable level turns contraction off instead, to keep its separate
# roundings (the same bits as on x86-64).
ifeq ($(ARCH),x86_64)
LEVELS := portable avx2 avx512
ISA_FLAGS_portable := -mno-avx
ISA_FLAGS_avx2     := -mavx2 -mfma -mno-avx512f
ISA_FLAGS_avx512   := -mavx2 -mfma -mavx512f
else ifeq ($(ARCH),aarch64)
LEVELS := portable neon
ISA_FLAGS_portable := -ffp-contract=off
else
LEVELS := portable
endif
KERNEL_SRC := $(wildcard src/*/*_kernel.h)
# $(call level_objects,DIR): every template's object at every level under DIR;
# $(call level_flags,OBJ): what compiles such an object's template at its level.
level_objects = $(foreach l,$(LEVELS),$(patsubst %_kernel.h,$(1)/%.$(l).o,$(KERNEL_SRC)))
level_of      = $(patsubst .%,%,$(suffix $(basename $(1))))
level_flags   = -DLM_LEVEL=$(call level_of,$(1)) $(ISA_FLAGS_$(call level_of,$(1))) -x c

# The library (src/, the public headers in include/lm/) and the programs'
# application code (train/, eval/, data/: every file there but the programs'
# own) build into liblm.a; each program is its one file linked against it.
# src/blas/backends/ holds one file per library: only this build's is compiled.
PROGRAM_SRC := train/train.c train/info.c eval/eval.c eval/sample.c eval/inspect.c eval/gemm_rate.c \
               data/prepare.c data/probegen.c data/convert.c
APP_SRC  := $(filter-out $(PROGRAM_SRC),$(wildcard train/*.c eval/*.c data/*.c))
LIB_SRC  := $(wildcard src/*/*.c) src/blas/backends/$(BLAS).c $(APP_SRC)
PAGE_C   := eval/inspect_page.c
PROGRAM_OBJ := $(PROGRAM_SRC:%.c=$(OUT)/%.o)
LIB_OBJ  := $(LIB_SRC:%.c=$(OUT)/%.o) $(call level_objects,$(OUT)) $(OUT)/$(PAGE_C:.c=.o)
LIB      := $(OUT)/liblm.a
PROGRAMS := $(BIN)/prepare $(BIN)/train $(BIN)/info $(BIN)/eval $(BIN)/sample $(BIN)/inspect $(BIN)/probegen $(BIN)/gemm-rate $(BIN)/convert
# The unit tests, tests/unit/LAYER/test_NAME.c, each built into $(OUT)/test_NAME (the
# binaries flat, whatever folder their source is in).
TEST_SRC := $(wildcard tests/unit/*/test_*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(OUT)/%.o)
TESTS    := $(patsubst %.c,$(OUT)/%,$(notdir $(TEST_SRC)))
# What a build directory's objects were compiled with, in a file rewritten
# only when that changes (another OPT, a build that finds oneDNN where the
# last found none, another compiler): every object depends on its
# directory's, so a change of flags rebuilds them all and none is left
# compiled the old way. Warnings (-W...) change no object and are left
# out, so -Werror reuses a build. MPI's flags have their own, for dist.o
# alone (so that make pack, which is built without MPI, reuses the
# release's other objects).
STAMP_TEXT = $(strip $(filter-out -W%,$(1)) $(filter -Wa$(comma)% -Wp$(comma)%,$(1)))
comma   := ,
FLAGS_STAMP := $(OUT)/.flags
FLAGS_TEXT  := $(call STAMP_TEXT,$(CC) $(CFLAGS) $(foreach l,$(LEVELS),$(ISA_FLAGS_$(l))))
MPI_STAMP   := $(OUT)/.flags-mpi
MPI_TEXT    := $(MPI_FEATURE_CFLAGS)
write_if_changed = [ "$$(cat $(1) 2>/dev/null)" = '$(subst ','\'',$(2))' ] || printf '%s\n' '$(subst ','\'',$(2))' >$(1)
# Each object's headers, as the compiler found them (-MMD: a .d beside the
# object, read below), so that editing a header rebuilds the objects that
# include it and no others.
DEPFLAGS := -MMD -MP

.SECONDEXPANSION:
.PHONY: FORCE all tests release release-test pack test unit-test test-mixers arm64-test bench demo data data-large compare probe clean asan deps fuzz fuzz-harness fuzz-info fuzz-seeds valgrind
all: $(PROGRAMS)

$(OUT)/%.o: %.c $(FLAGS_STAMP) | $(OUT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@
$(OUT)/src/runtime/dist.o: private CFLAGS += $(MPI_FEATURE_CFLAGS)
$(OUT)/src/runtime/dist.o: $(MPI_STAMP)
$(OUT)/tests/%.o: private CFLAGS += -I. -Itests/unit
$(FLAGS_STAMP): FORCE | $(OUT)
	@$(call write_if_changed,$@,$(FLAGS_TEXT))
$(MPI_STAMP): FORCE | $(OUT)
	@$(call write_if_changed,$@,$(MPI_TEXT))

# The levels' objects: the template the object's name leads back to
# (build-openblas/src/blas/gemv.avx2.o: src/blas/gemv_kernel.h).
$(call level_objects,$(OUT)): $(OUT)/%.o: $$(basename $$*)_kernel.h $(FLAGS_STAMP) | $(OUT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(call level_flags,$@) -c $< -o $@

# A build for other machines (a release, a packed copy for a bigger machine):
# every x86-64 runs it, and our kernels (the levels' objects above) still run
# at AVX2 or AVX-512 where the CPU has them. Into build-release*/ and
# bin-release/; tests/builds/portable_check.sh then proves that no object but the
# levels' objects holds an AVX instruction. release-test runs the release's
# unit tests at every level this CPU has.
RELEASE_OPT ?= -O3 -march=x86-64 -mtune=generic
RELEASE_VARS = BUILD=build-release BIN=bin-release OPT="$(RELEASE_OPT)"
release:
	$(MAKE) $(RELEASE_VARS) all
	bash tests/builds/portable_check.sh build-release$(BLAS_SUFFIX)
release-test: release
	$(MAKE) $(RELEASE_VARS) unit-test

# A packed copy of the release for another x86-64 Linux machine that cannot
# install this project's packages (a many-core or accelerator machine):
# PACK/bin (the programs), PACK/tests (the unit tests) and PACK/lib (every
# shared library they need but glibc's), found through an RPATH of
# $$ORIGIN/../lib, so nothing else on that machine (its Python, say) sees
# them. Built without MPI (Open MPI loads plugins from its own install), so
# the packed programs run as one process. scripts/pack.sh says how to use it.
# Its objects are the release's but src/runtime/dist.o (the only file MPI
# changes: the pack is built without it): where make release has built
# them, they are copied in (with their times, and the release's flags and
# header lists, so only what a source or header changed since is compiled
# again) rather than compiled a second time.
PACK ?= .portable
PACK_OUT := build-pack$(BLAS_SUFFIX)
RELEASE_OUT := build-release$(BLAS_SUFFIX)
pack:
	@if [ -d $(RELEASE_OUT)/src ]; then mkdir -p $(PACK_OUT) && cd $(RELEASE_OUT) && \
	  find . \( -name '*.o' -o -name inspect_page.c -o -name .flags \) ! -path ./src/runtime/dist.o -exec cp -pu --parents -t ../$(PACK_OUT) {} + && \
	  find . -name '*.d' ! -path ./src/runtime/dist.d | while read -r d; do p=../$(PACK_OUT)/$$d; \
	    if [ ! -e "$$p" ] || [ "$$d" -nt "$$p" ]; then sed 's|^$(RELEASE_OUT)/|$(PACK_OUT)/|' "$$d" >"$$p" && touch -r "$$d" "$$p"; fi; done && \
	  echo "pack: the release's objects from $(RELEASE_OUT)/ (all but src/runtime/dist.o, built without MPI)"; fi
	$(MAKE) BUILD=build-pack BIN=$(PACK_OUT)/bin OPT="$(RELEASE_OPT)" MPI=0 PACKED=1 all tests
	bash tests/builds/portable_check.sh $(PACK_OUT)
	bash scripts/pack.sh $(PACK_OUT) $(PACK)
ifeq ($(PACKED),1)
LDFLAGS += -Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib'
endif

# bin/inspect's page (eval/inspect_page.html) built into the library as a C
# string, generated into each build directory: each line quoted (backslash,
# quote and '?', against trigraphs, escaped), so any C compiler and any
# target take it, with no xxd, objcopy or assembler directives.
quote_page = { echo '/* generated from eval/inspect_page.html by the Makefile */'; echo 'const char inspect_page_html[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' -e 's/$$/\\n"/' $(1); echo ';'; } >$(2)
$(OUT)/$(PAGE_C): eval/inspect_page.html | $(OUT)
	@mkdir -p $(@D)
	$(call quote_page,$<,$@)
$(OUT)/$(PAGE_C:.c=.o): $(OUT)/$(PAGE_C) $(FLAGS_STAMP)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# Each program from its file: bin/NAME from train/, eval/ or data/NAME.c
# (bin/gemm-rate from eval/gemm_rate.c), compiled as the library's are.
program_obj = $(filter %/$(subst -,_,$(notdir $(1))).o,$(PROGRAM_OBJ))
$(PROGRAMS): $(BIN)/%: $$(call program_obj,%) $(LIB) $(BLAS_STAMP) | $(BIN)
	$(CC) $(CFLAGS) $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)

# Names the library the programs in $(BIN) were linked with; rewritten (so
# they relink) only when it changes.
$(BLAS_STAMP): FORCE | $(BIN)
	@[ "$$(cat $@ 2>/dev/null)" = "$(BLAS)" ] || echo "$(BLAS)" >$@
FORCE:

test_obj = $(filter %/$(1).o,$(TEST_OBJ))
$(TESTS): $(OUT)/%: $$(call test_obj,%) $(LIB) | $(OUT)
	$(CC) $(CFLAGS) $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS) -lcmocka

$(OUT) $(BIN):
	mkdir -p $@

# The unit tests, built (make arm64-test builds them for ARM64 to run under qemu).
tests: $(TESTS)
# GCC 12's ARM64 loop vectoriser stops with an internal compiler error
# (vect_transform_reduction) on this test's reference loops: not ours to vectorise.
ifeq ($(ARCH),aarch64)
$(OUT)/tests/unit/blas/test_bf16.o: private CFLAGS += -fno-tree-loop-vectorize
endif

# Unit tests and gradient checks (cmocka), then the programs from outside:
# bad input, resume, checkpoints, and parity with PyTorch autograd.
# At every instruction-set level of our kernels this CPU runs (lm/cpu.h:
# LM_MAX_ISA caps the level; bin/gemm-rate --isa-levels lists them), but
# UNIT_ONE_LEVEL, the tests that run no line of a level's files nor anything
# the cap changes (a coverage build at every level: docs/testing.md), which
# run at the best level alone. UNIT_LEVELS=best runs every test at the best
# level only: for a build whose levels' objects are another build's (CI's
# BLIS build: the same files with the same flags, tested at every level in
# the OpenBLAS build). Each test's seconds follow its line.
UNIT_ONE_LEVEL := test_bpe test_budget test_hf_import test_probe_tasks test_safetensors test_sampler test_signals
UNIT_LEVELS ?= all
unit-test: $(TESTS) $(BIN)/gemm-rate
	@levels=$$($(BIN)/gemm-rate --isa-levels); best=$$(echo "$$levels" | tail -1); \
	[ "$(UNIT_LEVELS)" = best ] && levels=$$best; \
	for isa in $$levels; do for t in $(TESTS); do \
	  case " $(UNIT_ONE_LEVEL) " in *" $${t##*/} "*) [ $$isa = $$best ] || continue ;; esac; \
	  echo "== $$t (LM_MAX_ISA=$$isa)"; t0=$$(date +%s); LM_MAX_ISA=$$isa OMP_NUM_THREADS=2 $$t || exit 1; \
	  echo "== $$t (LM_MAX_ISA=$$isa): $$(( $$(date +%s) - t0 )) s"; done; done
	@echo "== $(OUT)/test_bf16 as on a CPU without AVX512_BF16 (LM_TEST_CPU_HIDE: the conversion's AVX-512F path)"
	@LM_TEST_CPU_HIDE=avx512bf16 OMP_NUM_THREADS=2 $(OUT)/test_bf16

# The contract suite alone (tests/unit/mixers/test_mixers.c, also among unit-test's):
# each mixer of the registry checked through the Mixer interface, at every
# level this CPU runs; one line per mixer and level.
test-mixers: $(OUT)/test_mixers $(BIN)/gemm-rate
	@for isa in $$($(BIN)/gemm-rate --isa-levels); do echo "== $(OUT)/test_mixers (LM_MAX_ISA=$$isa)"; \
	  LM_MAX_ISA=$$isa OMP_NUM_THREADS=2 $(OUT)/test_mixers || exit 1; done

test: unit-test $(PROGRAMS)
	/usr/bin/python3 tests/house/house.py
	$(MAKE) release
	+bash tests/builds/pack_test.sh
	/usr/bin/python3 -m tests.house.doc_links
	/usr/bin/python3 -m tests.house.docs_options
	bash tests/cli/cli_test.sh
	bash tests/cli/init_test.sh
	bash tests/cli/resume_test.sh
	bash tests/cli/rope_test.sh
	bash tests/cli/recipe_test.sh
	bash tests/cli/inspect_test.sh
	bash tests/cli/mpi_test.sh
	bash tests/cli/muon_cli_test.sh
	/usr/bin/python3 -m tests.parity.muon_test $(OUT)
	bash tests/cli/hardstop_test.sh
	bash tests/cli/limits_test.sh
	bash tests/cli/harden_test.sh
	bash tests/cli/outputs_test.sh
	bash tests/cli/runs_harden_test.sh
	bash tests/cli/run_tools_test.sh
	bash tests/cli/bpe_cli_test.sh
	bash tests/cli/tokenizer_from_test.sh
	bash tests/js/bpe_agreement.sh
	bash tests/js/gpt2_tokenizer.sh
	@levels=$$($(BIN)/gemm-rate --isa-levels); best=$$(echo "$$levels" | tail -1); for isa in $$levels; do \
	  paths=$$([ $$isa = $$best ] || echo --kernel-paths); echo "== tests.parity $$paths (LM_MAX_ISA=$$isa)"; \
	  LM_MAX_ISA=$$isa /usr/bin/python3 -m tests.parity $$paths || exit 1; done
	/usr/bin/python3 -m tests.parity.gpt2_convert
	bash tests/cli/loss_mask_test.sh
	bash tests/cli/evals_test.sh
	bash tests/harness/probe_test.sh
	/usr/bin/python3 -m tests.harness.bench_test
	/usr/bin/python3 -m tests.harness.paper_test
	/usr/bin/python3 -m tests.harness.compare_test
	/usr/bin/python3 -m tests.harness.compare_sweep_test
	/usr/bin/python3 -m tests.harness.archs_test
	/usr/bin/python3 -m tests.harness.harness_harden_test
	/usr/bin/python3 -m tests.harness.harness_config_test
	/usr/bin/python3 -m tests.harness.harness_outputs_test
	/usr/bin/python3 -m tests.harness.harness_stop_test
	/usr/bin/python3 -m tests.fuzz.harness_fuzz
	/usr/bin/python3 -m tests.fuzz.info_fuzz
	bash tests/js/browser_test.sh

# The other BLAS library's programs too (bin-blis or bin-openblas), for the
# bench's blas section, which compares the two.
OTHER_BLAS := $(if $(filter openblas,$(BLAS)),blis,openblas)
bench: $(PROGRAMS)
	$(MAKE) BLAS=$(OTHER_BLAS) BIN=bin-$(OTHER_BLAS) all || echo "bench: could not build with $(OTHER_BLAS): its comparison is skipped"
	/usr/bin/python3 -m harness.bench $(BENCH_ARGS)

data: $(BIN)/prepare
	bash data/fetch_moby_dick.sh

# State of the Union addresses 1790-2021 (10.8 MB) into data/sotu: split by speech, BPE 8192.
data-large: $(BIN)/prepare
	bash data/fetch_sotu.sh

demo: 
	bash scripts/demo.sh

compare: $(PROGRAMS)
	@[ -s data/moby/test.bin ] || bash data/fetch_moby_dick.sh
	python3 -m harness.compare $(COMPARE_ARGS)

# The Grassmann paper's Table 1 (PAPER_ARGS="--table 2" for Table 2), pre- and
# post-norm, on data/sotu (make data-large) unless PAPER_ARGS names --data or
# --wikitext2 DIR: runs/paper/paper.md and paper.json.
.PHONY: paper
paper: $(PROGRAMS)
	@case "$(PAPER_ARGS)" in *--data*|*--wikitext2*|*--report-only*) ;; *) [ -s data/sotu/test.bin ] || $(MAKE) data-large ;; esac
	python3 -m harness.paper $(PAPER_ARGS)

deps:
	bash scripts/install-deps.sh

# ARM64, cross-compiled with Debian's aarch64 toolchain (scripts/install-deps-arm64.sh)
# into bin-arm64/ and build-arm64-openblas/, then run under qemu-user: the
# unit tests at each ARM64 level and a CLI suite, whose training is compared
# with this machine's build (bin/) (tests/builds/arm64_test.sh).
ARM64_CC ?= aarch64-linux-gnu-gcc
arm64-test: $(PROGRAMS)
	$(MAKE) CC=$(ARM64_CC) BUILD=build-arm64 BIN=bin-arm64 BLAS=openblas all tests
	BIN=$(BIN) bash tests/builds/arm64_test.sh

# Synthetic recall probes, MQAR and copy: runs/probe/probe.md and probe.json.
probe: $(PROGRAMS)
	python3 -m harness.probe $(PROBE_ARGS)

asan:
	$(MAKE) BUILD=build-asan BIN=bin-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
	        LDFLAGS="-fsanitize=address,undefined" unit-test all
	BIN=bin-asan bash tests/cli/cli_test.sh
	BIN=bin-asan bash tests/cli/init_test.sh
	BIN=bin-asan bash tests/cli/resume_test.sh
	BIN=bin-asan bash tests/cli/rope_test.sh
	BIN=bin-asan bash tests/cli/recipe_test.sh
	BIN=bin-asan bash tests/cli/inspect_test.sh
	BIN=bin-asan bash tests/cli/mpi_test.sh
	BIN=bin-asan bash tests/cli/muon_cli_test.sh
	BIN=bin-asan bash tests/cli/hardstop_test.sh
	BIN=bin-asan bash tests/cli/limits_test.sh
	BIN=bin-asan bash tests/cli/harden_test.sh
	BIN=bin-asan bash tests/cli/outputs_test.sh
	BIN=bin-asan bash tests/cli/runs_harden_test.sh
	BIN=bin-asan bash tests/cli/run_tools_test.sh
	BIN=bin-asan bash tests/cli/bpe_cli_test.sh
	BIN=bin-asan bash tests/cli/tokenizer_from_test.sh
	BIN=bin-asan bash tests/cli/loss_mask_test.sh
	BIN=bin-asan bash tests/cli/evals_test.sh
	BIN=bin-asan /usr/bin/python3 -m tests.parity.gpt2_convert

# Valgrind memcheck: the unit tests and a short train, eval and sample, with
# zero errors and no definitely lost bytes (VALGRIND_ARGS=--quick: the
# programs only). Built for AVX2 (valgrind does not know AVX-512), and the
# script pins BLIS to its AVX2 kernels too: a BLIS build, whatever BLAS says
# (the memcheck is of our code, not of the library). --quick builds only the
# programs it runs.
VG_TESTS := $(if $(filter --quick,$(VALGRIND_ARGS)),,build-vg/test_units build-vg/test_blas build-vg/test_tile_gemm build-vg/test_inspect \
              build-vg/test_mixers)
valgrind:
	$(MAKE) BLAS=blis BUILD=build-vg BIN=bin-vg OPT="-O1 -g -march=x86-64-v3" $(VG_TESTS) \
	        bin-vg/prepare bin-vg/train bin-vg/eval bin-vg/sample bin-vg/info
	bash tests/builds/valgrind_test.sh $(VALGRIND_ARGS)

# libFuzzer (clang) harnesses of the loaders, each seeded with tests/fuzz/seeds/<name>/.
# make fuzz FUZZ_SECONDS=N runs each for N seconds; new inputs go to runs/fuzz/<name>/,
# crashes to runs/fuzz/crash-*, and the run stops at the first. Then the harnesses' readers
# (fuzz-harness, below) for FUZZ_SECONDS in all, and bin/info's reader of checkpoint headers and run
# folders (fuzz-info) for FUZZ_SECONDS.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_FLAGS   := -std=c11 -g -O1 -fopenmp -D_DEFAULT_SOURCE -D_GNU_SOURCE -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
                -I. -Iinclude -Isrc -I/usr/include/stb $(BLAS_CFLAGS) $(FEATURE_CFLAGS) $(MPI_FEATURE_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wno-pass-failed
FUZZ_OBJ     := $(LIB_SRC:%.c=build-fuzz$(BLAS_SUFFIX)/%.o) $(call level_objects,build-fuzz$(BLAS_SUFFIX))
FUZZ_OBJ     += build-fuzz$(BLAS_SUFFIX)/$(PAGE_C:.c=.o)
FUZZERS      := $(patsubst tests/fuzz/%.c,build-fuzz$(BLAS_SUFFIX)/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_STAMP   := build-fuzz$(BLAS_SUFFIX)/.flags
$(FUZZ_STAMP): FORCE | build-fuzz$(BLAS_SUFFIX)
	@$(call write_if_changed,$@,$(call STAMP_TEXT,$(FUZZ_CC) $(FUZZ_FLAGS) $(foreach l,$(LEVELS),$(ISA_FLAGS_$(l)))))
build-fuzz$(BLAS_SUFFIX)/%.o: %.c $(FUZZ_STAMP) | build-fuzz$(BLAS_SUFFIX)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
# The levels' objects take their level's flags here too (the gemv kernels' intrinsics need them).
$(call level_objects,build-fuzz$(BLAS_SUFFIX)): build-fuzz$(BLAS_SUFFIX)/%.o: $$(basename $$*)_kernel.h $(FUZZ_STAMP) | build-fuzz$(BLAS_SUFFIX)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(DEPFLAGS) $(call level_flags,$@) -fsanitize=fuzzer-no-link -c $< -o $@
build-fuzz$(BLAS_SUFFIX)/$(PAGE_C): eval/inspect_page.html | build-fuzz$(BLAS_SUFFIX)
	@mkdir -p $(@D)
	$(call quote_page,$<,$@)
build-fuzz$(BLAS_SUFFIX)/$(PAGE_C:.c=.o): build-fuzz$(BLAS_SUFFIX)/$(PAGE_C) $(FUZZ_STAMP)
	$(FUZZ_CC) $(FUZZ_FLAGS) -c $< -o $@
build-fuzz$(BLAS_SUFFIX)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ) | build-fuzz$(BLAS_SUFFIX)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(DEPFLAGS) -MF $@.d -fsanitize=fuzzer $< $(FUZZ_OBJ) -o $@ $(LDLIBS)
build-fuzz$(BLAS_SUFFIX):
	mkdir -p $@
.SECONDARY: $(FUZZ_OBJ)
# The headers each object (and fuzzer) was compiled against (-MMD).
-include $(patsubst %.o,%.d,$(LIB_OBJ) $(PROGRAM_OBJ) $(TEST_OBJ) $(FUZZ_OBJ)) $(FUZZERS:=.d)
fuzz: $(FUZZERS)
	@for f in $(FUZZERS); do n=$$(basename $$f); mkdir -p runs/fuzz/$$n; echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
	      -artifact_prefix=runs/fuzz/ runs/fuzz/$$n tests/fuzz/seeds/$$n 2>runs/fuzz/$$n.log \
	    || { tail -40 runs/fuzz/$$n.log; exit 1; }; \
	  grep -E "^stat::(number_of_executed_units|peak_rss_mb)|cov:" runs/fuzz/$$n.log | tail -3; done
	@$(MAKE) --no-print-directory fuzz-harness
	@$(MAKE) --no-print-directory fuzz-info

# The harnesses' readers of results files (compare.csv, zoology.json, probe.json, ...) under
# Hypothesis: random inputs for FUZZ_SECONDS in all, shared by the readers (no clang needed).
fuzz-harness:
	/usr/bin/python3 -m tests.fuzz.harness_fuzz --seconds $(FUZZ_SECONDS)

# bin/info on run folders made from a good one, their checkpoint's header and config.json drawn by
# Hypothesis: one line and exit 2, or text without control bytes and JSON that parses.
fuzz-info: $(BIN)/prepare $(BIN)/train $(BIN)/info
	/usr/bin/python3 -m tests.fuzz.info_fuzz --seconds $(FUZZ_SECONDS)

# Remakes the seed inputs from a tiny model trained by the programs.
fuzz-seeds: $(PROGRAMS)
	bash tests/fuzz/make_seeds.sh

clean:
	rm -rf build build-asan build-fuzz build-vg bin bin-asan bin-vg build-openblas build-asan-openblas build-fuzz-openblas \
	       build-vg-openblas bin-blis bin-openblas build-release build-release-openblas bin-release build-arm64-openblas bin-arm64 \
	       build-pack build-pack-openblas
