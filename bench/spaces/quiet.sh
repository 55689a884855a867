#!/usr/bin/env bash
# tune's side of the construction bench alone, each space built in 3 fresh processes (first
# construction included), tabled against cppATF's published times from RESULTS.md: the
# "tune on a quiet machine" section. Run it on an otherwise idle machine.
#   bash bench/spaces/quiet.sh > /tmp/quiet.md
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cargo bench --manifest-path "$repo/Cargo.toml" --bench spaces --no-run >&2
bin=$(ls -t "$repo"/target/release/deps/spaces-* | grep -v '\.d$' | head -n 1)
runs=$(mktemp)
for s in $(grep -oE '"(S|T)[0-9]_[A-Za-z0-9_]+"' "$repo/benches/spaces.rs" | tr -d '"' | sort -u); do
  for _ in 1 2 3; do timeout 60 "$bin" "$s"; done
done > "$runs"
python3 "$here/quiet_table.py" "$here/RESULTS.md" "$runs"
rm -f "$runs"
