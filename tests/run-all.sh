#!/bin/bash
# run-all.sh - vigil's whole test suite: build with warnings as errors,
# unit and integration tests (mpirun with several ranks), make distcheck,
# the unit tests again under AddressSanitizer/UBSan and under valgrind, and
# a short fuzzing run of the parsers of untrusted input (configuration,
# progress lines, event logs, messages) and of the line buffer.  Fails if any test was
# skipped: everything here is something vigil relies on.
#
# Usage: tests/run-all.sh            (from a source checkout)
# Env:   JOBS (default 2), FUZZ_SECONDS (default 30)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-30}

if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

step() { printf '\n==== %s\n' "$*"; }

# show_logs DIR: print the logs of failed tests, so CI output says why.
show_logs() {
	local log
	for log in $(find "$1" -name '*.log' ! -name 'test-suite.log' ! -name config.log); do
		if grep -qE '^:test-result: (FAIL|ERROR|XPASS)' "${log%.log}.trs" 2>/dev/null; then
			echo "---- $log"; tail -n 80 "$log"
		fi
	done
}

# no_skips DIR: a skipped test in this suite is a failure.
no_skips() {
	local skipped
	skipped=$(grep -l '^:test-result: SKIP' $(find "$1" -name '*.trs') 2>/dev/null || true)
	if [ -n "$skipped" ]; then
		echo "tests were skipped (not allowed here):" >&2
		echo "$skipped" >&2
		return 1
	fi
}

if [ -f config.status ]; then
	# automake builds in a directory of its own only from an unconfigured source tree
	echo "run-all.sh: $top was configured in place (config.status is there):" \
		"run 'make distclean' in it first; build in a directory of its own" \
		"(mkdir build && cd build && ../configure) to keep both" >&2
	exit 2
fi

step "bootstrap"
autoreconf -fi

step "build and test (warnings are errors)"
rm -rf build-ci && mkdir build-ci && cd build-ci
../configure --enable-werror --enable-unit-tests
make -j"$jobs"
make -j"$jobs" fuzz-build  # the fuzzers link (they run last)
make -j"$jobs" check || { show_logs .; exit 1; }
no_skips .
cd "$top"

step "distcheck"
# The tarball is built, installed and tested from itself: every unit test
# and the integration tests that show it complete (a run, a check, the
# documented options, make install).  The whole suite ran in the tree
# just above; running it twice would double the time for nothing more.
# (TESTS on make's command line reaches the check inside distcheck.)
cd build-ci
dist_tests="$(make -s print-unit-tests | tr '\n' ' ') tests/layers.sh
	tests/integration/version.sh tests/integration/opts_docs.sh
	tests/integration/run_single.sh tests/integration/check_single.sh
	tests/integration/run_mpirun.sh tests/integration/install_destdir.sh"
make -j"$jobs" distcheck TESTS="$(echo $dist_tests)" || { show_logs .; exit 1; }
cd "$top"

step "MPICH: vigil built against MPICH, under mpiexec.hydra"
# Sites run MPICH-derived MPIs too: the agent built with MPICH's compiler
# wrapper, the tests that apply under Hydra (no Open MPI options).
rm -rf build-mpich && mkdir build-mpich && cd build-mpich
../configure --enable-werror MPICC=mpicc.mpich
make -j"$jobs"
make -j"$jobs" check MPIRUN=mpiexec.hydra TESTS="tests/integration/mpich.sh
	tests/integration/run_single.sh tests/integration/check_single.sh
	tests/integration/check_mpirun.sh tests/integration/batch_usage.sh" \
	|| { show_logs .; exit 1; }
no_skips .
cd "$top"

step "unit tests under AddressSanitizer and UndefinedBehaviorSanitizer"
rm -rf build-asan && mkdir build-asan && cd build-asan
../configure --enable-sanitizers=address,undefined --enable-unit-tests --enable-werror
make -j"$jobs"
unit=$(make -s print-unit-tests)
make -j"$jobs" check TESTS="$unit" || { show_logs .; exit 1; }
no_skips .
cd "$top"

step "unit tests under valgrind"
cd build-ci
for t in $(make -s print-unit-tests); do
	echo "valgrind $t"
	valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--suppressions="$top/tests/valgrind.supp" "./$t" > "$t.valgrind.log" 2>&1 \
		|| { cat "$t.valgrind.log"; exit 1; }
done
cd "$top"

step "fuzzing the parsers for ${fuzz_seconds}s each"
cd build-ci
make fuzz FUZZ_SECONDS="$fuzz_seconds"
cd "$top"

# One closing line for whoever reads the log: the tests counted from the
# automake result files of the plain and the sanitizer builds.
passed=$(cat build-ci/tests/unit/*/*.trs build-ci/tests/integration/*.trs build-ci/tests/*.trs build-asan/tests/unit/*/*.trs build-mpich/tests/integration/*.trs \
	| grep -c '^:test-result: PASS' || true)
failed=$(cat build-ci/tests/unit/*/*.trs build-ci/tests/integration/*.trs build-ci/tests/*.trs build-asan/tests/unit/*/*.trs build-mpich/tests/integration/*.trs \
	| grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
step "all passed"
echo "tests: $passed passed, $failed failed"
