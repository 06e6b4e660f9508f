# Transformer and Grassmann language models in C.
#   make            build the programs into bin/
#   make demo       the main job: deps, build, corpus, train, eval, sample
#   make test       every test (unit, gradient checks, CLI, PyTorch parity)
#   make bench      throughput and memory benchmarks
#   make data       fetch and prepare the default corpus (Moby Dick)
#   make compare    architectures of matched size, seeds, token and time budgets (COMPARE_ARGS=...)
#   make probe      MQAR and copy recall probes per architecture (PROBE_ARGS=...)
#   make asan       unit and CLI tests under AddressSanitizer + UBSan
CC      ?= cc
OPT     ?= -O3 -march=native
CFLAGS  += -std=c11 $(OPT) -fno-trapping-math -fno-math-errno -ffp-contract=fast -fopenmp -Wall -Wextra -Wno-format-truncation -D_DEFAULT_SOURCE -D_GNU_SOURCE \
           -Iinclude -I/usr/include/stb $(EXTRA_CFLAGS)
LDLIBS  += -lopenblas -lm
BUILD   ?= build
BIN     ?= bin

LIB_SRC  := $(wildcard src/*.c)
LIB_OBJ  := $(LIB_SRC:src/%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/liblm.a
PROGRAMS := $(BIN)/prepare $(BIN)/train $(BIN)/eval $(BIN)/sample
PROGRAMS += $(BIN)/probegen  # issue 7: synthetic recall probes
TESTS    := $(patsubst tests/%.c,$(BUILD)/%,$(wildcard tests/test_*.c))

.PHONY: all test unit-test bench demo data compare clean asan deps
all: $(PROGRAMS)

$(BUILD)/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	ar rcs $@ $^

$(BIN)/prepare: data/prepare.c $(LIB) | $(BIN)
	$(CC) $(CFLAGS) $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)
$(BIN)/train: train/train.c $(LIB) | $(BIN)
	$(CC) $(CFLAGS) $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)
$(BIN)/%: eval/%.c $(LIB) | $(BIN)
	$(CC) $(CFLAGS) $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/test_%: tests/test_%.c tests/testutil.h $(LIB) | $(BUILD)
	$(CC) $(CFLAGS) -Itests $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS) -lcmocka

$(BUILD) $(BIN):
	mkdir -p $@

# Unit tests and gradient checks (cmocka), then the programs from outside:
# bad input, resume, checkpoints, and parity with PyTorch autograd.
unit-test: $(TESTS)
	@for t in $(TESTS); do echo "== $$t"; OMP_NUM_THREADS=2 $$t || exit 1; done

test: unit-test $(PROGRAMS)
	bash tests/cli_test.sh
	/usr/bin/python3 tests/parity.py

bench: $(PROGRAMS)
	/usr/bin/python3 eval/bench.py

data: $(BIN)/prepare
	bash data/fetch_moby_dick.sh

demo: 
	bash scripts/demo.sh

compare: $(PROGRAMS)
	@[ -s data/moby/test.bin ] || bash data/fetch_moby_dick.sh
	python3 eval/compare.py $(COMPARE_ARGS)

deps:
	bash scripts/install-deps.sh

# Synthetic recall probes, MQAR and copy (issue 7): runs/probe/probe.md and probe.json.
.PHONY: probe
probe: $(PROGRAMS)
	python3 eval/probe.py $(PROBE_ARGS)

asan:
	$(MAKE) BUILD=build-asan BIN=bin-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
	        LDFLAGS="-fsanitize=address,undefined" unit-test all
	BIN=bin-asan bash tests/cli_test.sh

clean:
	rm -rf build build-asan bin bin-asan
