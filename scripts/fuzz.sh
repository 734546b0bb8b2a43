#!/usr/bin/env bash
# Runs one go test -fuzz target for a time budget (make fuzz calls it for each FUZZ_TARGETS entry).
#
#   scripts/fuzz.sh GO PACKAGE NAME FUZZTIME
#
# A failing input is what counts: go test writes it under PACKAGE/testdata/fuzz/NAME and the run
# fails. Go 1.26's fuzz coordinator also fails a run that found nothing with a bare "context
# deadline exceeded" when the -fuzztime deadline races a busy worker (golang/go#75804, fixed in
# Go 1.27): such a run, with no new input written, is run again, up to three times in all; any
# other failure, or a new failing input, fails at once.
set -uo pipefail
go=$1 pkg=$2 name=$3 fuzztime=$4
dir="$pkg/testdata/fuzz/$name"
count() { find "$dir" -type f 2>/dev/null | wc -l; }
for attempt in 1 2 3; do
  before=$(count)
  echo "+ $go test -run '^\$' -fuzz '^$name\$' -fuzztime $fuzztime $pkg"
  out=$("$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$pkg" 2>&1)
  status=$?
  printf '%s\n' "$out"
  [ "$status" -eq 0 ] && exit 0
  if [ "$(count)" -eq "$before" ] && grep -q '^    context deadline exceeded$' <<<"$out"; then
    echo "fuzz: $name stopped by Go's fuzztime deadline race (golang/go#75804), no failing input written; again ($attempt of 3)"
    continue
  fi
  exit "$status"
done
echo "fuzz: $name hit the deadline race three times; no failing input was found" >&2
exit 0
