# causeway: one binary, BPF objects with skeletons, tests and benchmarks.
#
#   make            build build/causeway (warnings are errors)
#   make deps       install every Debian package the build, tests and demo need
#   make test       build and run the whole test suite (needs root)
#   make bench      run the benchmarks and rewrite bench/RESULTS.md
#   make demo       the main job: a multi-tier example watched by causeway
#   make screenshots  refresh the README's pictures (docs/images) from a test
#   make fuzz       build the libFuzzer targets
#   make fuzz-long  run each for FUZZ_SECONDS (default 300)
#   make format     clang-format every C source in place
#   make deb        a Debian package in $(BUILD)/deb/ (binary, man pages, units)
#   V=1             show the commands

BUILD      ?= build
CC         ?= cc
CLANG      ?= clang
BPFTOOL    ?= bpftool
ARCH       := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# Debian packages: build, run, test, bench.  `make deps` installs them.
DEPS_BUILD := clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libcap-dev \
	libjson-c-dev libfftw3-dev libpcap-dev librdkafka-dev libigraph-dev \
	libgraphviz-dev graphviz libprotobuf-c-dev protobuf-c-compiler \
	libnetfilter-conntrack-dev libglpk-dev libclang-rt-14-dev pkg-config make gcc \
	libmicrohttpd-dev libcurl4-openssl-dev
DEPS_TEST  := iproute2 iptables conntrack procps curl iperf3 nginx-light \
	redis-server redis-tools postgresql postgresql-client memcached \
	python3 python3-psycopg2 python3-yaml kcat tcpdump kmod \
	chromium chromium-driver prometheus nodejs \
	debhelper pandoc lintian debootstrap python3-venv \
	openjdk-17-jre-headless maven dnsmasq-base
DEPS       := $(DEPS_BUILD) $(DEPS_TEST)

PKGS       := libbpf libelf zlib json-c fftw3 libpcap rdkafka libprotobuf-c igraph libcgraph libgvc \
	libnetfilter_conntrack libmicrohttpd libcurl
CFLAGS     ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wmissing-prototypes -Wstrict-prototypes -fno-strict-aliasing \
	-D_GNU_SOURCE -I$(BUILD) -I. $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
override LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcap -lm -lpthread -lglpk

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf \
	-Wall -Werror -Wno-unused-function

# Components and what each may include: the layers, one way.  The core
# library is everything a central machine needs and builds with no BTF,
# clang BPF target or bpftool; the agent library alone needs the skeletons.
# `make check-layers` enforces the table; `make check-core` builds and runs
# the core unit tests with the BPF toolchain hidden.
LAYER_common     :=
LAYER_paths      := common
LAYER_traces     := common paths
LAYER_samples    := common
LAYER_sim        := common
LAYER_correlator := common paths traces graph
LAYER_graph      := common !common/kafka.h
LAYER_viz        := common graph !common/kafka.h
LAYER_place      := common graph !common/kafka.h
LAYER_agent      := common bpf samples
LAYER_serve      := common paths traces samples correlator graph viz
LAYER_cli        := common paths traces samples sim correlator graph viz place agent serve cli
CORE_DIRS  := common paths traces samples sim correlator graph viz place serve
AGENT_DIRS := agent
CORE_SRCS  := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c))
AGENT_SRCS := $(foreach d,$(AGENT_DIRS),$(wildcard $(d)/*.c))
LIB_SRCS   := $(CORE_SRCS) $(AGENT_SRCS)
CLI_SRCS   := $(wildcard cli/*.c)
BPF_SRCS   := $(wildcard bpf/*.bpf.c)
SKELS      := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
CORE_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(CORE_SRCS))
AGENT_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(AGENT_SRCS))
LIB_OBJS   := $(CORE_OBJS) $(AGENT_OBJS)
CLI_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
UNIT_SRCS  := $(wildcard tests/unit/*.c)
# Unit tests that include the agent link the agent library too.
AGENT_UNIT_SRCS := $(shell grep -l '^\#include "agent/' $(UNIT_SRCS) 2>/dev/null)
CORE_UNIT_SRCS  := $(filter-out $(AGENT_UNIT_SRCS),$(UNIT_SRCS))
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
CORE_UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(CORE_UNIT_SRCS))
AGENT_UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(AGENT_UNIT_SRCS))
BIN        := $(BUILD)/causeway
CORE_LIB   := $(BUILD)/libcauseway-core.a
AGENT_LIB  := $(BUILD)/libcauseway-agent.a
# Wire schemas: protoc-c output lives in $(BUILD), never in the tree.
PROTOS     := $(wildcard common/*.proto)
PROTO_SRCS := $(patsubst %.proto,$(BUILD)/%.pb-c.c,$(PROTOS))
PROTO_HDRS := $(PROTO_SRCS:.c=.h)
PROTO_OBJS := $(patsubst $(BUILD)/%.c,$(BUILD)/obj/gen/%.o,$(PROTO_SRCS))

.PHONY: all deps test unit bench demo screenshots fuzz fuzz-long format clean check-layers check-funcs check-core core-units deb
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BIN)

deps:
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEPS)
	BUILD=$(BUILD) tests/kafka/fetch.sh

# Rebuild everything when the flags change.
$(BUILD)/.flags: FORCE
	$(Q)mkdir -p $(BUILD)
	$(Q)echo '$(CC) $(CFLAGS) $(LDLIBS) $(BPF_CFLAGS)' | cmp -s - $@ || \
		echo '$(CC) $(CFLAGS) $(LDLIBS) $(BPF_CFLAGS)' > $@
FORCE:

$(BUILD)/vmlinux.h: | $(BUILD)/.flags
	$(call msg,GEN,$@)
	$(Q)test -r /sys/kernel/btf/vmlinux || \
		{ echo "causeway: the running kernel has no BTF (/sys/kernel/btf/vmlinux)" >&2; exit 1; }
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h $(BUILD)/.flags
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp.o
	$(Q)$(BPFTOOL) gen object $@ $@.tmp.o && rm -f $@.tmp.o

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/%.pb-c.c $(BUILD)/%.pb-c.h: %.proto $(BUILD)/.flags
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(BUILD)
	$(Q)protoc-c --c_out=$(BUILD) $<

$(BUILD)/obj/gen/%.o: $(BUILD)/%.c $(BUILD)/.flags
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB_OBJS) $(CLI_OBJS) $(UNIT_BINS): | $(PROTO_HDRS)

# Only the agent's objects (and what links them) wait for the skeletons.
$(AGENT_OBJS) $(CLI_OBJS) $(AGENT_UNIT_BINS): | $(SKELS)

$(BUILD)/obj/%.o: %.c $(BUILD)/.flags
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# The page's files (serve/assets/*) as a C table, made in $(BUILD).
SERVE_ASSETS := $(sort $(wildcard serve/assets/*))
$(BUILD)/serve_assets.c: $(SERVE_ASSETS) serve/mkassets.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sh serve/mkassets.sh $(SERVE_ASSETS) > $@.tmp && mv $@.tmp $@

$(CORE_LIB): $(CORE_OBJS) $(PROTO_OBJS) $(BUILD)/obj/gen/serve_assets.o
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(AGENT_LIB): $(AGENT_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN): $(CLI_OBJS) $(AGENT_LIB) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(CLI_OBJS) $(AGENT_LIB) $(CORE_LIB) $(LDLIBS)

$(CORE_UNIT_BINS): $(BUILD)/tests/%: tests/unit/%.c $(CORE_LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(CORE_LIB) $(LDLIBS)

$(AGENT_UNIT_BINS): $(BUILD)/tests/%: tests/unit/%.c $(AGENT_LIB) $(CORE_LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(AGENT_LIB) $(CORE_LIB) $(LDLIBS)

unit: $(UNIT_BINS)

# Every folder includes only what its LAYER_ line allows.
check-layers:
	$(Q)tests/check_layers.sh $(foreach d,$(sort $(CORE_DIRS) $(AGENT_DIRS) cli),$(d)='$(LAYER_$(d))')

# No function over 80 lines without a comment above it saying why.
check-funcs:
	$(Q)tests/check_funcs.py $(LIB_SRCS) $(CLI_SRCS) $(BPF_SRCS)

# The core library and its unit tests, built apart with no BTF, no clang
# BPF target and no bpftool (each replaced by one that fails), then run.
core-units: $(CORE_UNIT_BINS)

check-core:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/core CLANG=false \
		BPFTOOL=false core-units
	$(Q)tests/run_units.sh $(BUILD)/core/tests

test: check-layers check-funcs check-core $(BIN) $(UNIT_BINS) fuzz
	$(Q)BUILD=$(BUILD) tests/run.sh $(TESTS)

bench: $(BIN)
	$(Q)BUILD=$(BUILD) bench/run.sh

demo: $(BIN)
	$(Q)BUILD=$(BUILD) examples/demo.sh

# The README's pictures: screenshots that t_serve_page and t_serve_traces
# take of the page.
SHOTS := graph-process graph-host heatmap paths samples placement
screenshots: $(BIN)
	$(Q)BUILD=$(BUILD) tests/run.sh t_serve_page
	$(Q)mkdir -p docs/images
	$(Q)for s in $(SHOTS); do \
		cp $(BUILD)/test-logs/t_serve_page/$$s.png docs/images/ || exit 1; \
	done
	$(Q)BUILD=$(BUILD) tests/run.sh t_serve_traces
	$(Q)cp $(BUILD)/test-logs/t_serve_traces/waterfall.png docs/images/

# libFuzzer targets: tests/fuzz/fuzz_<name>.c, each linked with the library
# sources it names in a "// fuzz-sources:" line (a generated source named
# under build/ is taken from $(BUILD)/), and with common/utf8.c, which every
# decoder and writer of names calls.
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
	-D_GNU_SOURCE -I$(BUILD) -I. $(shell pkg-config --cflags $(PKGS) 2>/dev/null)

fuzz: $(FUZZ_BINS)

# A longer campaign than the smoke runs of tests/run.sh: every harness for
# FUZZ_SECONDS from its corpus, new inputs kept in $(BUILD)/fuzz-long/,
# crashes written there (crash-*); one summary line per harness.
FUZZ_SECONDS ?= 300
fuzz-long: $(FUZZ_BINS)
	$(Q)for f in $(FUZZ_BINS); do n=$${f##*/fuzz_}; \
		w=$(BUILD)/fuzz-long/$$n; mkdir -p $$w/corpus; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
			-close_fd_mask=2 -print_final_stats=1 \
			-artifact_prefix=$$w/ $$w/corpus \
			$$( [ -d tests/fuzz/corpus/$$n ] && echo tests/fuzz/corpus/$$n ) \
			>$$w/log 2>&1; rc=$$?; \
		printf '%-16s rc=%d %s, %s corpus, %s crashes\n' $$n $$rc \
			"$$(sed -n 's/^stat::number_of_executed_units: *//p' $$w/log) runs" \
			"$$(ls $$w/corpus | wc -l)" "$$(ls $$w | grep -c '^crash-')"; \
	done

$(BUILD)/fuzz/%: tests/fuzz/%.c $(CORE_SRCS) $(PROTO_SRCS) $(BUILD)/.flags
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ $< common/utf8.c \
		$$(sed -n 's|^// fuzz-sources: *||p' $< | \
			sed 's%\(^\| \)build/%\1$(BUILD)/%g') $(LDLIBS)

# The Debian package: the binary built again with Debian's hardening
# flags, a man page per docs/causeway*.md (pandoc), the units and configs
# of deploy/, packed by debhelper from deploy/debian in a staging folder.
DEB_DIR    := $(BUILD)/deb
DEB_FLAGS   = $(shell dpkg-buildflags --get CFLAGS) \
	$(shell dpkg-buildflags --get CPPFLAGS) $(shell dpkg-buildflags --get LDFLAGS)
MANS       := $(patsubst docs/%.md,$(DEB_DIR)/man/%.1,$(wildcard docs/causeway*.md))

$(DEB_DIR)/bin/causeway: FORCE
	$(Q)CFLAGS='$(DEB_FLAGS)' $(MAKE) --no-print-directory BUILD=$(DEB_DIR)/bin $@

$(DEB_DIR)/man/%.1: docs/%.md deploy/man.lua cli/commands.h
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)pandoc -s -f markdown -t man --shift-heading-level-by=-1 \
		--lua-filter=deploy/man.lua -V adjusting=l \
		-M title=$* -M section=1 -M header='causeway manual' \
		-M footer="causeway $$(sed -n 's/.*CW_VERSION "\(.*\)"/\1/p' cli/commands.h)" \
		-o $@.tmp $< && mv $@.tmp $@

deb: $(DEB_DIR)/bin/causeway $(MANS)
	$(call msg,DEB,$(DEB_DIR))
	$(Q)rm -rf $(DEB_DIR)/src $(DEB_DIR)/*.deb && mkdir -p $(DEB_DIR)/src
	$(Q)cp -r deploy/debian deploy/systemd deploy/etc $(DEB_DIR)/man \
		$(DEB_DIR)/bin/causeway $(DEB_DIR)/src/
	$(Q)cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc -d >../build.log 2>&1 || \
		{ tail -n 30 ../build.log; exit 1; }
	$(Q)ls $(DEB_DIR)/*.deb

format:
	clang-format -i $(LIB_SRCS) $(CLI_SRCS) $(BPF_SRCS) $(wildcard */*.h) \
		$(UNIT_SRCS) $(FUZZ_SRCS)

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(UNIT_BINS:=.d) \
	$(PROTO_OBJS:.o=.d)
