#!/usr/bin/env bash
# Training under Slurm (issue 16): the test configures and starts a one-node Slurm cluster of
# its own (Debian's slurm-wlm: munged with its own key if munge is installed, slurmctld and
# slurmd on this host, every file in scratch, no cgroups), then `srun -n 3 train CONFIG` with
# a config whose cluster {} gives only job sizes (ps: 1, worker: 2; Slurm task 0 is the ps,
# task 1 the chief) and async replication. Each task takes its identity from Slurm's
# environment and listens on this host at port 2222 + its local rank.
#   (a) a short run finishes: srun exits 0 and the chief prints "last step N";
#   (b) a longer run gets SIGTERM from the scheduler (`scancel --signal=TERM`) after two
#       periodic checkpoints: the chief checkpoints and exits 143, which srun and slurmctld
#       report; the same srun command resumes from that checkpoint, is cancelled with plain
#       `scancel` (SIGTERM, SIGKILL 30 s later) and stops the same way; run a third time, it
#       resumes again and finishes.
# Prints "SKIP: <why>" and passes where slurm-wlm is not installed or its daemons cannot start.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

export PATH="$PATH:/usr/sbin:/sbin"
for tool in slurmctld slurmd srun sinfo squeue scancel scontrol; do
  command -v "$tool" > /dev/null || { echo "SKIP: slurm-wlm is not installed ($tool not found)"; exit 0; }
done
# Nothing from a Slurm job around this test may leak into ours.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SLURM_')

# The tasks listen on 2222..2224 (README: 2222 + the local rank); wait a while if they are busy.
ports_free() {
  python3 -c 'import socket
for p in (2222, 2223, 2224):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", p)); s.close()' \
    2> /dev/null
}
for ((i = 0; i < 60; i++)); do ports_free && break; sleep 0.5; done
ports_free || { echo "SKIP: ports 2222-2224, where Slurm tasks listen, are in use"; exit 0; }

# Slurm's own files. Unix socket paths are limited to 108 bytes, so not under TEST_TMPDIR.
SL=$(mktemp -d /tmp/sluice-slurm.XXXXXX) || fail "no directory for Slurm"
mkdir -p "$SL/state" "$SL/spool" "$SL/log" "$SL/munge"
chmod 700 "$SL/munge"
NODE=$(hostname -s)
ME=$(id -un)
export SLURM_CONF="$SL/slurm.conf"
DAEMONS=()

# Jobs first (their tasks, by the pids slurmd reports), then the daemons, then scratch.
cleanup_slurm() {
  if ((${#DAEMONS[@]} > 0)); then
    local jobs pids
    jobs=$(timeout 5 squeue -h -o %i 2> /dev/null)
    for j in $jobs; do
      pids=$(timeout 5 scontrol listpids "$j" 2> /dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $1 }')
      for p in $pids; do kill -9 "$p" 2> /dev/null; done
      timeout 5 scancel "$j" 2> /dev/null
    done
    for p in "${DAEMONS[@]}"; do kill -TERM "$p" 2> /dev/null; done
    for ((i = 0; i < 50; i++)); do
      local alive=0
      for p in "${DAEMONS[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
      ((alive)) || break
      sleep 0.1
    done
    for p in "${DAEMONS[@]}"; do kill -9 "$p" 2> /dev/null; done
  fi
  cleanup_background
  rm -rf "$SL"
}
trap cleanup_slurm EXIT

skip_slurm() {  # WHY
  echo "SKIP: slurm-wlm cannot start here: $1"
  for f in "$SL"/log/*; do [[ -s "$f" ]] && { echo "--- $f"; tail -5 "$f"; }; done
  exit 0
}

# ---- munged with its own key and socket, when munge is installed; else auth/none. ----
AUTH="AuthType=auth/none
CredType=cred/none"
if command -v munged > /dev/null && command -v munge > /dev/null; then
  head -c 1024 /dev/urandom > "$SL/munge/munge.key" && chmod 600 "$SL/munge/munge.key"
  munged --foreground --force --socket="$SL/munge/socket" --key-file="$SL/munge/munge.key" \
    --pid-file="$SL/munge/munged.pid" --log-file="$SL/log/munged.log" --seed-file="$SL/munge/seed" \
    > "$SL/log/munged.out" 2>&1 &
  DAEMONS+=($!)
  for ((i = 0; i < 50; i++)); do
    munge --socket="$SL/munge/socket" -n 2> /dev/null | unmunge --socket="$SL/munge/socket" > /dev/null 2>&1 && break
    sleep 0.1
  done
  if munge --socket="$SL/munge/socket" -n 2> /dev/null | unmunge --socket="$SL/munge/socket" > /dev/null 2>&1; then
    AUTH="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SL/munge/socket"
  else
    echo "munged did not start ($(tail -1 "$SL/log/munged.out" 2> /dev/null)); using auth/none"
  fi
fi

read -r CTLD_PORT SLURMD_PORT < <(free_ports 2)
cat > "$SLURM_CONF" << EOF
ClusterName=sluicetest
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=$ME
SlurmdUser=$ME
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
$AUTH
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool
SlurmctldPidFile=$SL/slurmctld.pid
SlurmdPidFile=$SL/slurmd.pid
SlurmctldLogFile=$SL/log/slurmctld.log
SlurmdLogFile=$SL/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=sluice Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

slurmctld -D -i -f "$SLURM_CONF" > "$SL/log/slurmctld.out" 2>&1 &
DAEMONS+=($!)
slurmd -D -N "$NODE" -f "$SLURM_CONF" > "$SL/log/slurmd.out" 2>&1 &
DAEMONS+=($!)
state=""
for ((i = 0; i < 300; i++)); do
  state=$(timeout 5 sinfo -h -n "$NODE" -o %t 2> /dev/null)
  [[ "$state" == idle ]] && break
  for p in "${DAEMONS[@]}"; do kill -0 "$p" 2> /dev/null || skip_slurm "a daemon (pid $p) exited"; done
  sleep 0.1
done
[[ "$state" == idle ]] || skip_slurm "node $NODE is '$state', not idle, after 30 s"
probe=$(timeout 30 srun -n 1 --job-name=sluice-probe true 2>&1) ||
  skip_slurm "srun cannot start a task: $(echo "$probe" | tail -2)"
echo "Slurm is up: node $NODE idle ($(sed -n 's/^AuthType=//p' "$SLURM_CONF"), slurmctld port $CTLD_PORT)"

# ---- The experiment: fashion_mlp_async with a cluster of job sizes only. ----
EXP="$SCRATCH/fashion_mlp_slurm.pbtxt"
cp "$PWD/configs/fashion_mlp_async.pbtxt" "$EXP" || fail "no configs/fashion_mlp_async.pbtxt"
echo 'cluster { job { name: "ps" task: "" } job { name: "worker" task: "" task: "" } }' >> "$EXP"

# `srun -n 3 train EXP` for STEPS steps, a checkpoint every 20; each task's output to
# LOGS-<rank>.log (Slurm task 0 is the ps, 1 the chief, 2 worker 1). Prints srun's code.
run_srun() {  # NAME RUN_DIR STEPS LOGS
  # shellcheck disable=SC2046
  timeout 180 srun -n 3 --job-name="$1" --output="$4-%t.log" \
    "$TRAIN" "$EXP" --run_dir "$2" $(mlp_flags "$3" 20 3) > "$4-srun.log" 2>&1
}

job_exit_code() {  # JOB_NAME: ExitCode as slurmctld keeps it, e.g. 143:0
  local id
  id=$(timeout 5 squeue -h -t all -S i -n "$1" -o %i 2> /dev/null | tail -1)
  [[ -n "$id" ]] && timeout 5 scontrol show job "$id" 2> /dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p'
}

task_tails() {  # LOGS
  for t in 0 1 2; do echo "--- task $t"; tail -4 "$1-$t.log" 2> /dev/null; done
  echo "--- srun"; tail -4 "$1-srun.log"
}

# ---- (a) A short run finishes. ----
SHORT="$SCRATCH/short"
run_srun sluice-short "$SCRATCH/run_short" 30 "$SHORT"
code=$?
[[ $code == 0 ]] || fail "srun of a 30-step run exited $code: $(task_tails "$SHORT")"
grep -q "task           worker:0 (from Slurm)" "$SHORT-1.log" ||
  fail "Slurm task 1 is not the chief: $(grep -m1 '^  task ' "$SHORT-1.log")"
grep -q "task           ps:0 (from Slurm)" "$SHORT-0.log" ||
  fail "Slurm task 0 is not the ps: $(grep -m1 '^  task ' "$SHORT-0.log")"
# Async replicas advance one global step, so the chief may end a step past the target.
last=$(sed -n 's/^last step \([0-9]*\) loss .*/\1/p' "$SHORT-1.log")
[[ -n "$last" && "$last" -ge 30 ]] || fail "the chief did not reach step 30: $(task_tails "$SHORT")"
grep -q "stopping: the chief finished training" "$SHORT-0.log" ||
  fail "the ps did not stop with the chief: $(tail -3 "$SHORT-0.log")"
echo "(a) srun -n 3: exit 0, chief: $(grep '^last step' "$SHORT-1.log"), Slurm job ExitCode $(job_exit_code sluice-short)"

# ---- (b) SIGTERM from the scheduler, twice; then the same command resumes and finishes. ----
STEPS=1000
RUN="$SCRATCH/run_long"

# Runs the long srun command in the background and, once the state file names a checkpoint at
# step MIN or later, stops it with `scancel ARGS JOB`; checks that the chief stopped at a step
# S with a checkpoint, the tasks exited 143 and Slurm says so; sets `stopped` to S.
stop_with_scancel() {  # LOGS MIN ARGS...
  local logs=$1 min=$2 srun_pid latest="" job code=timeout how
  shift 2
  how="scancel${*:+ $*}"
  run_srun sluice-long "$RUN" $STEPS "$logs" &
  srun_pid=$!
  BACKGROUND_PIDS+=("$srun_pid")
  for ((i = 0; i < 1200; i++)); do
    latest=$(state_latest_step "$RUN")
    [[ "${latest:-0}" -ge $min ]] && break
    kill -0 "$srun_pid" 2> /dev/null || fail "the run ended before it was stopped: $(task_tails "$logs")"
    sleep 0.1
  done
  [[ "${latest:-0}" -ge $min ]] ||
    fail "no checkpoint at step $min after 120 s (latest '$latest'): $(task_tails "$logs")"
  job=$(timeout 5 squeue -h -t running -n sluice-long -o %i)
  [[ -n "$job" ]] || fail "squeue does not list the running job"
  timeout 10 scancel "$@" "$job" || fail "$how $job failed"
  # Plain scancel sends SIGKILL KillWait (30 s) after SIGTERM: the chief must be done sooner.
  for ((i = 0; i < 600; i++)); do
    if ! kill -0 "$srun_pid" 2> /dev/null; then
      wait "$srun_pid"
      code=$?
      break
    fi
    sleep 0.1
  done
  [[ $code == 143 ]] || fail "srun exited '$code' after $how (want 143): $(task_tails "$logs")"
  stopped=$(sed -n 's/^stopped by signal at step \([0-9]*\).*/\1/p' "$logs-1.log")
  [[ -n "$stopped" && "$stopped" -lt $STEPS ]] ||
    fail "the chief did not say it stopped by signal: $(task_tails "$logs")"
  grep -q "^saved .*/checkpoints/ckpt-$stopped\$" "$logs-1.log" ||
    fail "the chief saved no checkpoint at step $stopped: $(tail -4 "$logs-1.log")"
  [[ "$(state_latest_step "$RUN")" == "$stopped" ]] ||
    fail "the latest checkpoint is '$(state_latest_step "$RUN")', not $stopped"
  grep -Eq "^srun: error: .*: tasks? [0-9,-]+: Exited with exit code 143$" "$logs-srun.log" ||
    fail "srun does not report the tasks' 143: $(cat "$logs-srun.log")"
  grep -q "stopping: the chief was stopped by a signal" "$logs-0.log" ||
    fail "the ps did not wait for the chief: $(tail -3 "$logs-0.log")"
  slurm_code=$(job_exit_code sluice-long)
  [[ "$slurm_code" == 143:0 ]] || fail "slurmctld reports ExitCode '$slurm_code' for the stopped job (want 143:0)"
  echo "(b) $how: chief stopped at step $stopped, saved ckpt-$stopped; srun exit 143," \
    "Slurm job ExitCode $slurm_code"
}

# A signal only (the job goes on until its tasks exit), after two periodic checkpoints.
stop_with_scancel "$SCRATCH/first" 40 --signal=TERM
first=$stopped
# The same command resumes; this time the job is cancelled (SIGTERM, then SIGKILL after KillWait).
stop_with_scancel "$SCRATCH/second" $((first + 40))
resumed=$(resumed_step "$SCRATCH/second-1.log")
[[ "$resumed" == "$first" ]] ||
  fail "the second run resumed at step '$resumed', not $first: $(grep -m1 resumed "$SCRATCH/second-1.log")"
second=$stopped

AGAIN="$SCRATCH/again"
run_srun sluice-long "$RUN" $STEPS "$AGAIN"
code=$?
[[ $code == 0 ]] || fail "the same srun command again exited $code: $(task_tails "$AGAIN")"
resumed=$(resumed_step "$AGAIN-1.log")
[[ "$resumed" == "$second" ]] ||
  fail "the chief resumed at step '$resumed', not $second: $(grep -m1 resumed "$AGAIN-1.log")"
last=$(sed -n 's/^last step \([0-9]*\) loss .*/\1/p' "$AGAIN-1.log")
[[ -n "$last" && "$last" -ge $STEPS ]] || fail "the resumed run did not reach step $STEPS: $(task_tails "$AGAIN")"
[[ "$(state_latest_step "$RUN")" == "$last" ]] || fail "no checkpoint at step $last after the resumed run"
echo "(b) the same srun command: $(grep -m1 '^resumed from' "$AGAIN-1.log"); $(grep '^last step' "$AGAIN-1.log")"
echo PASS
