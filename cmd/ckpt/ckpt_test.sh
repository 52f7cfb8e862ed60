#!/bin/bash
# ckpt: list/inspect/verify on checkpoints written by another process (the
# Saver in make_test_checkpoints); exit codes 0 ok, 1 corrupt, 2 usage; convert
# to a TensorFlow checkpoint and back.
set -u
BIN="$TEST_SRCDIR/sluice/cmd/ckpt/ckpt"
MAKE="$TEST_SRCDIR/sluice/cmd/ckpt/make_test_checkpoints"
RUN="$TEST_TMPDIR/run"
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments should exit 2"
"$BIN" frobnicate "$RUN" >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown command should exit 2"
"$BIN" --help >/dev/null 2>&1 || fail "--help should exit 0"
msg=$("$BIN" list "$TEST_TMPDIR/nothing" 2>&1); [ $? -eq 2 ] || fail "missing path should exit 2"
echo "$msg" | grep -q "no checkpoint at" || fail "unclear message: $msg"
"$BIN" list --help | grep -q "^usage: ckpt" || fail "--help after a command should print the usage"
msg=$("$BIN" convert "$TEST_TMPDIR/x" 2>&1); [ $? -eq 2 ] || fail "convert without TO should exit 2"
echo "$msg" | grep -q "convert takes FROM and TO" || fail "convert without TO should say what is missing: $msg"
mkdir -p "$TEST_TMPDIR/fresh_run/checkpoints"
msg=$("$BIN" list "$TEST_TMPDIR/fresh_run" 2>&1); [ $? -eq 2 ] || fail "a run without checkpoints should exit 2"
echo "$msg" | grep -q "has no checkpoint yet" || fail "a run without checkpoints is still a run directory: $msg"

rm -rf "$RUN"
"$MAKE" "$RUN" || fail "could not write checkpoints"

out=$("$BIN" list "$RUN") || fail "list failed: $out"
echo "$out" | grep -q "ckpt-2: step 2" || fail "list should show the newest checkpoint: $out"
echo "$out" | grep -E -q "dense/kernel +float +\[4,3\] +48 B" || fail "list should show dtype/shape/bytes: $out"
echo "$out" | grep -q "emb@0,1:- .*slice 0,1:- of \[2,2\]" || fail "list should show slices: $out"

out=$("$BIN" inspect "$RUN/checkpoints/ckpt-1") || fail "inspect failed: $out"
echo "$out" | grep -E -q "dense/kernel .*min=-5.5 max=5.5 mean=0" || fail "inspect stats: $out"
echo "$out" | grep -E -q "global_step .*min=1 max=1 mean=1" || fail "inspect step: $out"

out=$("$BIN" verify "$RUN") || fail "verify of a good run should exit 0: $out"
[ "$(echo "$out" | grep -c '^OK .*/ckpt-')" -eq 2 ] || fail "verify should check both checkpoints: $out"
echo "$out" | grep -q '^OK .*/checkpoints/checkpoint$' || fail "verify should check the state file: $out"
cp -r "$RUN" "$TEST_TMPDIR/garbled"
echo "garbage {{{" > "$TEST_TMPDIR/garbled/checkpoints/checkpoint"
out=$("$BIN" verify "$TEST_TMPDIR/garbled"); rc=$?
[ $rc -eq 1 ] || fail "verify of a garbled state file should exit 1, got $rc: $out"
echo "$out" | grep -q '^CORRUPT .*/checkpoints/checkpoint' || fail "verify should name the state file: $out"
"$BIN" verify "$RUN/checkpoints/ckpt-2/shard-00000-of-00001" >/dev/null || fail "verify of a shard store"

# Flip one byte in the middle of ckpt-2's SST file.
sst=$(ls "$RUN"/checkpoints/ckpt-2/shard-00000-of-00001/*.sst | head -1)
size=$(stat -c %s "$sst")
printf '\xff' | dd of="$sst" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
out=$("$BIN" verify "$RUN"); rc=$?
[ $rc -eq 1 ] || fail "verify of a corrupt checkpoint should exit 1, got $rc: $out"
echo "$out" | grep -q "CORRUPT .*ckpt-2" || fail "verify should name the checkpoint: $out"
echo "$out" | grep -q "^OK .*ckpt-1" || fail "ckpt-1 is still fine: $out"
"$BIN" verify "$RUN/checkpoints/ckpt-1" >/dev/null || fail "verify ckpt-1 alone should exit 0"

# Crafted checkpoints (valid CRCs, lying contents): a FILES path leaving the
# directory, a FIFO, a symlink. Each is exit 1 naming the file, never a hang.
RUN2="$TEST_TMPDIR/run2"
rm -rf "$RUN2"
"$MAKE" "$RUN2" || fail "could not write checkpoints"
C="$RUN2/checkpoints/ckpt-2"
S="$C/shard-00000-of-00001"
orig=$(grep -v '^crc32c ' "$C/FILES")
rewrite() { "$MAKE" --rewrite-files "$C" || fail "could not rewrite FILES"; }
up=$(printf '../%.0s' $(seq 64))
{ echo "$orig"; echo "${up}dev/zero 0 00000000"; } | rewrite
out=$(timeout 30 "$BIN" verify "$C"); rc=$?
[ $rc -eq 1 ] || fail "FILES naming ${up}dev/zero: verify should exit 1, got $rc: $out"
echo "$out" | grep -q "$C/FILES line .*leaves the checkpoint directory" || fail "should name FILES and the line: $out"
echo "$orig" | rewrite
"$BIN" verify "$C" >/dev/null || fail "the original FILES should verify again"

mkfifo "$S/fifo" || fail "mkfifo"
{ echo "$orig"; echo "shard-00000-of-00001/fifo 0 00000000"; } | rewrite
out=$(timeout 30 "$BIN" verify "$C"); rc=$?
[ $rc -eq 1 ] || fail "a FIFO in the checkpoint: verify should exit 1, got $rc: $out"
echo "$out" | grep -q "$S/fifo is not a regular file" || fail "should name the FIFO: $out"
out=$(timeout 30 "$BIN" list "$C" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a FIFO in the checkpoint: list should exit 1, got $rc: $out"
rm -f "$S/fifo"
echo "$orig" | rewrite

cp "$S/CURRENT" "$RUN2/CURRENT.copy"
rm "$S/CURRENT"
ln -s "$RUN2/CURRENT.copy" "$S/CURRENT"
out=$(timeout 30 "$BIN" verify "$RUN2"); rc=$?
[ $rc -eq 1 ] || fail "a symlink in the checkpoint: verify should exit 1, got $rc: $out"
echo "$out" | grep -q "CORRUPT .*$S/CURRENT is a symlink" || fail "should name the symlink: $out"
echo "$out" | grep -q "^OK .*ckpt-1" || fail "ckpt-1 is still fine: $out"
# TensorFlow checkpoints: convert the run to a TF bundle (the partitioned
# embedding assembled whole), list/inspect/verify it, convert it back to a
# Sluice checkpoint directory with the same values; damage is exit 1.
TF="$TEST_TMPDIR/tf/model.ckpt"
out=$("$BIN" convert "$RUN/checkpoints/ckpt-1" "$TF") || fail "convert to a TF bundle failed: $out"
echo "$out" | grep -q "wrote 3 tensor(s) from .*ckpt-1 to TensorFlow checkpoint $TF" || fail "convert message: $out"
[ -f "$TF.index" ] && [ -f "$TF.data-00000-of-00001" ] || fail "convert should write $TF.index and .data-00000-of-00001"
out=$("$BIN" convert "$RUN/checkpoints/ckpt-1" "$TF" 2>&1); [ $? -eq 2 ] || fail "converting over an existing bundle should exit 2: $out"
# Of the run: its newest checkpoint that reads whole, as train resumes from
# (ckpt-2 is damaged above), with a warning; of ckpt-2 itself, exit 1.
out=$("$BIN" convert "$RUN" "$TEST_TMPDIR/tf_run/model.ckpt" 2>&1) || fail "convert of a run whose newest checkpoint is damaged failed: $out"
echo "$out" | grep -q "^ckpt: warning: skipping .*/ckpt-2: " || fail "no warning about the damaged ckpt-2: $out"
echo "$out" | grep -q "wrote 3 tensor(s) from .*ckpt-1 to TensorFlow checkpoint" || fail "not converted from ckpt-1: $out"
out=$("$BIN" convert "$RUN/checkpoints/ckpt-2" "$TEST_TMPDIR/tf_2/model.ckpt" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "convert of the damaged ckpt-2 itself should exit 1, got $rc: $out"
out=$("$BIN" list "$TF") || fail "list of a TF bundle failed: $out"
echo "$out" | grep -q "TensorFlow checkpoint $TF: 1 data shard(s), 3 tensor(s)" || fail "bundle list header: $out"
echo "$out" | grep -E -q "emb +float +\[2,2\] +16 B" || fail "the partitioned emb should be whole [2,2]: $out"
out=$("$BIN" inspect "$TF.index") || fail "inspect of PREFIX.index failed: $out"
echo "$out" | grep -E -q "dense/kernel .*min=-5.5 max=5.5 mean=0" || fail "bundle inspect stats: $out"
echo "$out" | grep -E -q "emb .*min=1 max=4 mean=2.5" || fail "bundle inspect emb: $out"
"$BIN" verify "$TF" | grep -q "^OK .*$TF" || fail "verify of a good bundle"
BACK="$TEST_TMPDIR/back/ckpt-7"
out=$("$BIN" convert "$TF" "$BACK") || fail "convert back failed: $out"
out=$("$BIN" inspect "$BACK") || fail "inspect of the converted checkpoint failed: $out"
echo "$out" | grep -E -q "dense/kernel .*min=-5.5 max=5.5 mean=0" || fail "round trip dense/kernel: $out"
echo "$out" | grep -E -q "emb +float +\[2,2\] .*min=1 max=4 mean=2.5" || fail "round trip emb: $out"
echo "$out" | grep -E -q "global_step +int64 .*min=1 max=1" || fail "round trip global_step: $out"
out=$("$BIN" list "$BACK") || fail "list of the converted checkpoint failed: $out"
echo "$out" | grep -q "step 1" || fail "the converted checkpoint should be at its global_step, 1: $(echo "$out" | head -2)"
out=$("$BIN" convert "$TF" "$BACK" 2>&1); [ $? -eq 2 ] || fail "converting onto an existing directory should exit 2: $out"
out=$("$BIN" convert "$TEST_TMPDIR/nothing" "$TEST_TMPDIR/x" 2>&1); [ $? -eq 2 ] || fail "convert of nothing should exit 2"
data="$TF.data-00000-of-00001"
printf '\x55' | dd of="$data" bs=1 seek=3 conv=notrunc 2>/dev/null
out=$("$BIN" verify "$TF"); rc=$?
[ $rc -eq 1 ] || fail "verify of a damaged bundle should exit 1, got $rc: $out"
echo "$out" | grep -q "CORRUPT .*$data: tensor '.*' at offset .*CRC32C mismatch" || fail "should name the data file: $out"
head -c 20 "$TF.index" > "$TF.index.cut" && mv "$TF.index.cut" "$TF.index"
out=$("$BIN" list "$TF" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "list of a truncated index should exit 1, got $rc: $out"
echo "$out" | grep -q "$TF.index is truncated" || fail "should name the index: $out"
echo PASS
