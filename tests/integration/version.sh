#!/bin/bash
# vigil --version says the version configure was given (AC_INIT), the one
# source of it.
. "$(dirname "$0")/lib.sh"

: "${PACKAGE_VERSION:?PACKAGE_VERSION must be the version configure was given}"
out=$("$VIGIL" --version); rc=$?
expect_eq "vigil --version" 0 "$rc"
expect_eq "vigil --version says the package's version" "vigil $PACKAGE_VERSION" "$out"
out=$("$VIGIL" version)
expect_eq "vigil version too" "vigil $PACKAGE_VERSION" "$out"

finish
