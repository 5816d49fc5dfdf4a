#!/usr/bin/env bash
# Fuzz every fuzz target of the module for FUZZTIME each (default 5s).
# go test already runs each target's seed corpus; this explores beyond it.
# A failing input is kept under the package's testdata/fuzz/ by go test:
# add it to the seed corpus with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
go=${GO:-go}

# go test -list prints a package's targets, then its "ok" line.
listing=$("$go" test -list '^Fuzz' ./...)
targets=()
pending=()
while IFS= read -r line; do
  case $line in
  Fuzz*) pending+=("$line") ;;
  ok*)
    read -r _ pkg _ <<<"$line"
    for t in "${pending[@]}"; do targets+=("$pkg $t"); done
    pending=()
    ;;
  esac
done <<<"$listing"
if [ ${#targets[@]} -eq 0 ]; then
  echo "scripts/fuzz.sh: no fuzz target found" >&2
  exit 1
fi

failed=()
start=$SECONDS
for entry in "${targets[@]}"; do
  read -r pkg target <<<"$entry"
  echo "== $target ($pkg, $fuzztime)"
  log=$(mktemp)
  # -fuzzminimizetime bounds the minimizing of each new input (60s by
  # default), which the fuzzing time may otherwise end in the middle of.
  fuzz=("$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s "$pkg")
  if ! "${fuzz[@]}" 2>&1 | tee "$log"; then
    # go test's fuzzing coordinator reports "context deadline exceeded",
    # with no failing input, when -fuzztime ends before its workers have
    # read the seed corpus or while one minimizes a new input (a loaded
    # machine): that is no finding, so the target runs again, up to twice;
    # any other failure counts.
    tries=0
    while grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log" && [ $tries -lt 2 ]; do
      tries=$((tries + 1))
      echo "== $target: the fuzzing time ended while the corpus was read or an input minimized; once more"
      if "${fuzz[@]}" 2>&1 | tee "$log"; then
        : >"$log"
        break
      fi
    done
    if [ -s "$log" ]; then
      failed+=("$target ($pkg)")
    fi
  fi
  rm -f "$log"
done
echo "fuzzed ${#targets[@]} targets for $fuzztime each in $((SECONDS - start))s"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz target failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
