#!/usr/bin/env bash
# Writes a plugged-in CA for meshd into <dir> (Istio's cacerts layout, meshd/ca/README.md "The root"):
# a root, an intermediate that signs workload certificates, the chain, and the bootstrap-token key.
# Optional: without it meshd's replicas share a self-signed root (README.md, "The CA"). With it, every
# replica reads the Secret cacerts through the API and signs with its root.
# Usage: deploy/kubernetes/make_cacerts.sh <dir> [trust domain, default cluster.local]
# Then: kubectl create secret generic cacerts -n mesh-system --from-file=<dir>/ca-cert.pem \
#   --from-file=<dir>/ca-key.pem --from-file=<dir>/cert-chain.pem --from-file=<dir>/root-cert.pem \
#   --from-file=<dir>/token-signing-key.pem
# (token-signing-key.pem is used only when the Secret is mounted at ROOT_CA_DIR; README.md, "The CA".)
# Keep <dir>/root-key.pem offline: it is not part of the Secret.
set -euo pipefail
dir=${1:?usage: make_cacerts.sh <dir> [trust domain]}
domain=${2:-cluster.local}
mkdir -p "$dir"
cd "$dir"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -keyout root-key.pem -out root-cert.pem -days 3650 \
  -subj "/O=$domain/CN=Mesh Root CA" \
  -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca-cert.csr \
  -subj "/O=$domain/CN=Mesh Intermediate CA" 2>/dev/null
printf 'basicConstraints=critical,CA:true,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n' >ca-cert.ext
openssl x509 -req -in ca-cert.csr -CA root-cert.pem -CAkey root-key.pem -CAcreateserial -days 730 \
  -extfile ca-cert.ext -out ca-cert.pem 2>/dev/null
cat ca-cert.pem root-cert.pem >cert-chain.pem
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out token-signing-key.pem
rm -f ca-cert.csr ca-cert.ext root-cert.srl
chmod 644 root-cert.pem ca-cert.pem cert-chain.pem
echo "wrote $dir: ca-cert.pem ca-key.pem cert-chain.pem root-cert.pem token-signing-key.pem (and root-key.pem: keep it offline)"
