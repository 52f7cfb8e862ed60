#!/bin/bash
# records: usage errors exit 2, bad input exits 1 naming the file, and a
# conversion of small IDX files writes the shards (checked by size).
set -u
BIN="$TEST_SRCDIR/sluice/cmd/records/records"
OUT="$TEST_TMPDIR/out"
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no --output_dir should exit 2"
"$BIN" --output_dir="$OUT" --bogus=1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown flag should exit 2"
"$BIN" --output_dir="$OUT" --shards=0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--shards=0 should exit 2"
"$BIN" --help >/dev/null 2>&1 || fail "--help should exit 0"

IN="$TEST_TMPDIR/in"; mkdir -p "$IN"
msg=$("$BIN" --input_dir="$IN" --output_dir="$OUT" --splits=t10k 2>&1); rc=$?
[ $rc -eq 1 ] || fail "missing input should exit 1, got $rc"
echo "$msg" | grep -q "t10k-images-idx3-ubyte.gz" || fail "the error should name the file: $msg"

# Two 2x2 images and their labels (plain IDX, gzip-compressed).
printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x02\x01\x02\x03\x04\x05\x06\x07\x08' | gzip > "$IN/t10k-images-idx3-ubyte.gz"
printf '\x00\x00\x08\x01\x00\x00\x00\x02\x07\x03' | gzip > "$IN/t10k-labels-idx1-ubyte.gz"
"$BIN" --input_dir="$IN" --output_dir="$OUT" --splits=t10k --shards=2 2>"$TEST_TMPDIR/log" || fail "conversion failed: $(cat "$TEST_TMPDIR/log")"
grep -q "2 examples -> 2 shards" "$TEST_TMPDIR/log" || fail "no progress summary: $(cat "$TEST_TMPDIR/log")"
for s in 0 1; do
  f="$OUT/t10k-0000$s-of-00002.tfrecord"
  [ -s "$f" ] || fail "missing shard $f"
done
[ ! -e "$OUT/t10k-00000-of-00002.tfrecord.tmp" ] || fail "temporary file left behind"
grep -q $'\r' "$TEST_TMPDIR/log" && fail "progress lines (\\r) written into a log file"

# Converted again with one shard (and "--flag VALUE"): the two-shard files go.
"$BIN" --input_dir "$IN" --output_dir "$OUT" --splits t10k --shards 1 2>"$TEST_TMPDIR/log1" || fail "reconversion failed: $(cat "$TEST_TMPDIR/log1")"
[ -s "$OUT/t10k-00000-of-00001.tfrecord" ] || fail "missing the one shard"
[ ! -e "$OUT/t10k-00000-of-00002.tfrecord" ] || fail "an earlier run's shard was left beside the new ones: $(ls "$OUT")"

# A split without input files fails before any split is written.
rm -rf "$OUT"
msg=$("$BIN" --input_dir="$IN" --output_dir="$OUT" --splits=t10k,tset 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a missing split should exit 1, got $rc"
echo "$msg" | grep -q "tset-images-idx3-ubyte.gz does not exist" || fail "the error should name the missing file: $msg"
[ ! -e "$OUT/t10k-00000-of-00004.tfrecord" ] || fail "t10k was converted before the missing split was found"

# Labels and images disagree in count: exit 1.
printf '\x00\x00\x08\x01\x00\x00\x00\x03\x07\x03\x01' | gzip > "$IN/t10k-labels-idx1-ubyte.gz"
"$BIN" --input_dir="$IN" --output_dir="$OUT" --splits=t10k >/dev/null 2>&1; [ $? -eq 1 ] || fail "count mismatch should exit 1"
echo PASS
