#!/bin/sh
# Makes throwaway TLS material for grpc_tls_test in directory $1 (which must
# exist): a CA (ca.crt), a server certificate for 127.0.0.1 (server.crt,
# server.key) and a client certificate (client.crt, client.key) signed by it,
# and a client certificate signed by another CA (rogue.crt, rogue.key).
# EC P-256 keys, valid for two days. Tests only: nothing here is secret.
set -eu
cd "$1"

make_ca() {  # name, common name
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1.key" -out "$1.crt" -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

make_cert() {  # name, common name, ca name, extensions
  printf '%s\n' "$4" > "$1.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
  openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial \
    -out "$1.crt" -days 2 -extfile "$1.ext"
}

make_ca ca "sluice test CA"
make_ca rogue_ca "another CA"
make_cert server 127.0.0.1 ca "basicConstraints=CA:FALSE
subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth"
make_cert client "sluice worker 0" ca "basicConstraints=CA:FALSE
extendedKeyUsage=clientAuth"
make_cert rogue "sluice worker 1" rogue_ca "basicConstraints=CA:FALSE
extendedKeyUsage=clientAuth"
