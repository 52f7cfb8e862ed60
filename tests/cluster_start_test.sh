#!/usr/bin/env bash
# How the tasks of a cluster start (issue 15), each task a `train` process
# started here with its own TF_CONFIG on 127.0.0.1:
#  1. mutual TLS (certificates made here with openssl): the cluster trains and
#     the ps stops when the chief says so (exit 0); a ps whose certificate
#     another CA signed is never reached, and the chief says which task it
#     waits for and gives up (retryable exit) after start_timeout_secs;
#  2. a ps started with another config: both tasks refuse to work together
#     and name the other task (exit 2);
#  3. a ps waiting for a chief that never comes stops on SIGTERM (exit 143).
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

CLUSTER_CONFIG="$PWD/configs/fashion_mlp_cluster.pbtxt"
tf_config() {  # PS_PORT WORKER_PORT TYPE
  echo "{\"cluster\": {\"ps\": [\"127.0.0.1:$1\"], \"worker\": [\"127.0.0.1:$2\"]}, \"task\": {\"type\": \"$3\", \"index\": 0}}"
}
# Waits up to SECS for PID (a child of this shell) to exit; sets CODE to its
# exit code, or to "timeout". Not in a subshell: only this shell can wait.
wait_exit() {  # PID SECS
  local i
  CODE=timeout
  for ((i = 0; i < $2 * 10; i++)); do
    if ! kill -0 "$1" 2>/dev/null; then
      wait "$1"
      CODE=$?
      return
    fi
    sleep 0.1
  done
}
FLAGS="--set train.deterministic=true --set train.steps=20 --set train.eval_every_steps=0 --set monitoring.metrics_port=-1"

# --- 1. TLS -------------------------------------------------------------------
CERTS="$SCRATCH/certs"
mkdir -p "$CERTS"
make_cert() {  # CA_NAME TASK_NAME
  openssl req -newkey rsa:2048 -nodes -keyout "$CERTS/$2.key" -out "$CERTS/$2.csr" -subj "/CN=127.0.0.1" 2>/dev/null &&
    printf "subjectAltName=IP:127.0.0.1\n" > "$CERTS/ext.cnf" &&
    openssl x509 -req -in "$CERTS/$2.csr" -CA "$CERTS/$1.pem" -CAkey "$CERTS/$1.key" -CAcreateserial \
      -out "$CERTS/$2.pem" -days 1 -extfile "$CERTS/ext.cnf" 2>/dev/null
}
for ca in ca other_ca; do
  timeout 60 openssl req -x509 -newkey rsa:2048 -nodes -keyout "$CERTS/$ca.key" -out "$CERTS/$ca.pem" -days 1 \
    -subj "/CN=$ca" 2>/dev/null || fail "openssl could not make $ca"
done
make_cert ca task || fail "openssl could not make the task certificate"
make_cert other_ca stranger || fail "openssl could not make the stranger's certificate"
tls() {  # CERT_NAME CA_NAME
  echo "--set cluster.tls.cert_file=$CERTS/$1.pem --set cluster.tls.key_file=$CERTS/$1.key --set cluster.tls.ca_file=$CERTS/$2.pem"
}

read -r PS_PORT WORKER_PORT <<< "$(free_ports 2)"
# shellcheck disable=SC2046,SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" ps) "$TRAIN" "$CLUSTER_CONFIG" $FLAGS $(tls task ca) \
  --run_dir "$SCRATCH/tls_ps" > "$SCRATCH/tls_ps.log" 2>&1 &
PS=$!
BACKGROUND_PIDS+=("$PS")
# shellcheck disable=SC2046,SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" worker) timeout 120 "$TRAIN" "$CLUSTER_CONFIG" $FLAGS $(tls task ca) \
  --run_dir "$SCRATCH/tls_chief" > "$SCRATCH/tls_chief.log" 2>&1
code=$?
[[ $code == 0 ]] || fail "the TLS chief exited $code: $(tail -5 "$SCRATCH/tls_chief.log")"
grep -q "^last step 20 loss " "$SCRATCH/tls_chief.log" || fail "the TLS chief did not train: $(tail -5 "$SCRATCH/tls_chief.log")"
wait_exit "$PS" 10
code=$CODE
[[ $code == 0 ]] || fail "the TLS ps ended with '$code' after the chief finished: $(tail -5 "$SCRATCH/tls_ps.log")"
grep -q "stopping: the chief finished training" "$SCRATCH/tls_ps.log" || fail "the ps did not say why it stopped: $(tail -3 "$SCRATCH/tls_ps.log")"
echo "TLS cluster: trained 20 steps, ps exited 0"

# A ps with a certificate from another CA: the chief cannot reach it.
read -r PS_PORT WORKER_PORT <<< "$(free_ports 2)"
# shellcheck disable=SC2046,SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" ps) "$TRAIN" "$CLUSTER_CONFIG" $FLAGS $(tls stranger other_ca) \
  --run_dir "$SCRATCH/stranger_ps" > "$SCRATCH/stranger_ps.log" 2>&1 &
PS=$!
BACKGROUND_PIDS+=("$PS")
# shellcheck disable=SC2046,SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" worker) timeout 60 "$TRAIN" "$CLUSTER_CONFIG" $FLAGS $(tls task ca) \
  --set cluster.start_timeout_secs=8 --run_dir "$SCRATCH/stranger_chief" > "$SCRATCH/stranger_chief.log" 2>&1
code=$?
[[ $code -ge 128 && $code != 143 ]] || fail "a chief that cannot reach its ps exited $code (want a retryable code): $(tail -3 "$SCRATCH/stranger_chief.log")"
grep -q "waiting for /job:ps/replica:0/task:0 to start" "$SCRATCH/stranger_chief.log" ||
  fail "the chief did not say which task it waits for: $(tail -3 "$SCRATCH/stranger_chief.log")"
grep -q "error: task /job:ps/replica:0/task:0 did not answer within" "$SCRATCH/stranger_chief.log" ||
  fail "the chief's error does not name the ps: $(tail -3 "$SCRATCH/stranger_chief.log")"
grep -q "last step" "$SCRATCH/stranger_chief.log" && fail "the chief trained with a ps it cannot trust"
kill "$PS" 2>/dev/null
echo "TLS with another CA: the chief gave up with $code naming the ps"

# --- 2. another config ----------------------------------------------------------
read -r PS_PORT WORKER_PORT <<< "$(free_ports 2)"
# shellcheck disable=SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" ps) "$TRAIN" "$CLUSTER_CONFIG" $FLAGS --set train.seed=2 \
  --run_dir "$SCRATCH/drift_ps" > "$SCRATCH/drift_ps.log" 2>&1 &
PS=$!
BACKGROUND_PIDS+=("$PS")
# shellcheck disable=SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" worker) timeout 60 "$TRAIN" "$CLUSTER_CONFIG" $FLAGS \
  --run_dir "$SCRATCH/drift_chief" > "$SCRATCH/drift_chief.log" 2>&1
code=$?
[[ $code == 2 ]] || fail "a chief whose ps runs another config exited $code: $(tail -3 "$SCRATCH/drift_chief.log")"
grep -q "task /job:ps/replica:0/task:0 runs config [0-9a-f]* but .*every task of a cluster must run the same experiment" \
  "$SCRATCH/drift_chief.log" || fail "the chief does not name the ps: $(tail -3 "$SCRATCH/drift_chief.log")"
wait_exit "$PS" 10
code=$CODE
[[ $code == 2 ]] || fail "the ps with another config ended with '$code': $(tail -3 "$SCRATCH/drift_ps.log")"
grep -q "/job:worker/replica:0/task:0 runs config" "$SCRATCH/drift_ps.log" ||
  fail "the ps does not name the chief: $(tail -3 "$SCRATCH/drift_ps.log")"
echo "another config: both tasks exited 2 naming each other"

# --- 3. SIGTERM while waiting -----------------------------------------------------
read -r PS_PORT WORKER_PORT <<< "$(free_ports 2)"
# shellcheck disable=SC2086
TF_CONFIG=$(tf_config "$PS_PORT" "$WORKER_PORT" ps) "$TRAIN" "$CLUSTER_CONFIG" $FLAGS \
  --run_dir "$SCRATCH/lonely_ps" > "$SCRATCH/lonely_ps.log" 2>&1 &
PS=$!
BACKGROUND_PIDS+=("$PS")
for ((i = 0; i < 100; i++)); do
  grep -q "serving on port $PS_PORT" "$SCRATCH/lonely_ps.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "serving on port $PS_PORT" "$SCRATCH/lonely_ps.log" || fail "the ps never served: $(tail -3 "$SCRATCH/lonely_ps.log")"
kill -TERM "$PS"
wait_exit "$PS" 5
code=$CODE
[[ $code == 143 ]] || fail "a waiting ps ended with '$code' after SIGTERM: $(tail -3 "$SCRATCH/lonely_ps.log")"
echo "a ps waiting for its chief stopped on SIGTERM with 143"
echo PASS
