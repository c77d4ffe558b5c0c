#!/usr/bin/env bash
# Makes throwaway TLS material for the security tests in DIR (EC P-256 keys,
# valid for 2 days):
#   ca.pem/.key              the cluster's CA
#   server.pem/.key          signed by ca; SAN IP:127.0.0.1, DNS:localhost;
#                            serverAuth + clientAuth (the cluster config's own
#                            cert_file, which in-config clients present too)
#   named_server.pem/.key    signed by ca; SAN DNS:ps-shard.internal only
#                            (for tls.server_name_override)
#   client.pem/.key          signed by ca; clientAuth
#   rogue_ca.pem/.key        a second CA nobody trusts
#   rogue_client.pem/.key    signed by rogue_ca; clientAuth
# Usage: make_certs.sh DIR
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

ca() {  # name common_name
  key "$1"
  openssl req -x509 -new -key "$1.key" -sha256 -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem" 2>/dev/null
}

leaf() {  # name ca common_name extensions
  key "$1"
  openssl req -new -key "$1.key" -subj "/CN=$3" -out "$1.csr" 2>/dev/null
  printf '%b\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
    -days 2 -sha256 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

LEAF="basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment"
ca ca "ps test CA"
ca rogue_ca "rogue test CA"
leaf server ca ps-server \
  "$LEAF\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost"
leaf named_server ca ps-shard \
  "$LEAF\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:ps-shard.internal"
leaf client ca ps-client "$LEAF\nextendedKeyUsage=clientAuth"
leaf rogue_client rogue_ca ps-client "$LEAF\nextendedKeyUsage=clientAuth"
openssl verify -CAfile ca.pem server.pem named_server.pem client.pem >/dev/null
