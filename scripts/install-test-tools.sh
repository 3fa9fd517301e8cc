#!/usr/bin/env bash
# Installs what the tests run beside the Rust toolchain, from Debian's packages:
# - a headless Java runtime and HdrHistogram's Java library (libhdrhistogram-java, 2.1.11 on
#   bookworm), whose tools read the load generator's .hlog and write .hgrm files to compare
#   with its own (crates/tickwheel-loadgen/tests/hdrhistogram_java.rs);
# - valgrind, whose cache simulator gives the load generator's `--cost simulated`.
# Idempotent: prints nothing and changes nothing when all are there already; otherwise one
# line says what it installs. Exit 1 when it cannot install them.
set -euo pipefail

JAR=/usr/share/java/hdrhistogram.jar

packages=()
[ -f "$JAR" ] || packages+=(libhdrhistogram-java)
command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
command -v valgrind >/dev/null 2>&1 || packages+=(valgrind)
[ ${#packages[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-tools: no apt-get here; install ${packages[*]} by hand" \
    "(HdrHistogram 2.1.11's jar at $JAR)" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  SUDO=(sudo)
fi
# Slim Debian images drop the man directories, and the JRE's postinst links into man1.
"${SUDO[@]}" mkdir -p /usr/share/man/man1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "install-test-tools: installing ${packages[*]} (apt-get; once per machine)" >&2
if ! { "${SUDO[@]}" apt-get update -qq &&
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${packages[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-test-tools: apt-get failed" >&2
  exit 1
fi

if ! command -v java >/dev/null 2>&1 || [ ! -f "$JAR" ] || ! command -v valgrind >/dev/null 2>&1; then
  echo "install-test-tools: installed, but java, valgrind or $JAR is still missing" >&2
  exit 1
fi
