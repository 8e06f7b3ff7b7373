#!/usr/bin/env bash
# A throwaway test CA and a server certificate it signed, for pubbot's HTTPS endpoint tests:
#   Tests/Peers/tls/make_ca.sh DIR [IP…]
# writes DIR/ca.pem (the CA's certificate, for --ca-file), DIR/server.pem and DIR/server.key
# (for --tls-cert/--tls-key; subjectAltName the given IPs, default 127.0.0.1, and localhost),
# and DIR/other-ca.pem (a CA that signed nothing here: a client trusting only it must refuse).
# EC P-256 keys, valid one day; nothing outside DIR is touched.
set -euo pipefail
dir=$1; shift
ips=("${@:-127.0.0.1}")
mkdir -p "$dir"
cd "$dir"
san="DNS:localhost"
for ip in "${ips[@]}"; do san="$san,IP:$ip"; done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=pubbot test CA" \
  -keyout ca.key -out ca.pem -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=another CA" \
  -keyout other-ca.key -out other-ca.pem -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=pubbot test endpoint" \
  -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
echo "$dir"
