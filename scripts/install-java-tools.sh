#!/usr/bin/env bash
# Installs what crates/tickwheel-loadgen/tests/hdrhistogram_java.rs runs: a headless Java
# runtime and HdrHistogram's Java library (Debian's libhdrhistogram-java, 2.1.11 on bookworm,
# whose tools read the loadgen's .hlog and write .hgrm files to compare with its own).
# Idempotent: prints nothing and changes nothing when both are there already.
set -euo pipefail

JAR=/usr/share/java/hdrhistogram.jar

if command -v java >/dev/null 2>&1 && [ -f "$JAR" ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-java-tools: no apt-get here; install a Java runtime and HdrHistogram 2.1.11" \
    "(put its jar at $JAR) by hand" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  SUDO=(sudo)
fi

packages=(libhdrhistogram-java)
if ! command -v java >/dev/null 2>&1; then
  packages+=(openjdk-17-jre-headless)
  # Slim Debian images drop the man directories, and the JRE's postinst links into man1.
  "${SUDO[@]}" mkdir -p /usr/share/man/man1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "install-java-tools: installing ${packages[*]}" >&2
if ! { "${SUDO[@]}" apt-get update -qq &&
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${packages[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-java-tools: apt-get failed" >&2
  exit 1
fi

if ! command -v java >/dev/null 2>&1 || [ ! -f "$JAR" ]; then
  echo "install-java-tools: installed, but java or $JAR is still missing" >&2
  exit 1
fi
