#!/usr/bin/env bash
# Checks what the `deno run` images hold, without a container engine: the files the Containerfiles
# COPY, a fresh DENO_DIR filled by their `deno cache` lines, then meshd and the ingress gateway run as
# the Deployments run them: uid 1993, application and DENO_DIR read-only, cacerts read-only (made by
# make_cacerts.sh), no network but loopback (no npm at run time), and the gateway's readiness probe
# command from ingress_gateway.yaml. meshd reads ingress_gateway.yaml from --configDir (there is no
# kube-apiserver here for its Kubernetes source); the gateway uses a `meshd token` bootstrap token in place of
# the projected service-account token. The gateway runs from the proxy bundle the image builds
# (tests/integration/proxy/bundle_test.ts runs a STRICT pair with Workers from it). Needs root (unshare,
# mount, setpriv), openssl, curl and the
# npm registry (for deno cache). Usage: sudo deploy/kubernetes/images/check_run_images.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
deno="$repo/.tools/node_modules/.bin/deno"
work=$(mktemp -d /tmp/mesh-images.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # mktemp makes it 0700: uid 1993 must reach the files
mkdir -p "$work/app" "$work/run/cfg"
cd "$repo"
# The COPY lines of meshd.run.Containerfile and proxy.run.Containerfile.
cp -r deno.json deno.lock shared meshd proxy "$work/app/"
# Their RUN deno cache lines.
(cd "$work/app" && DENO_DIR="$work/deno-dir" NO_COLOR=1 "$deno" cache --frozen meshd/main.ts \
  meshd/server/serving/child_main.ts meshd/ca/signer_worker.ts proxy/main.ts proxy/workers/worker.ts \
  >/dev/null 2>&1)
# meshd.run.Containerfile's run of meshd before DENO_DIR turns read-only.
(cd "$work/app" && DENO_DIR="$work/deno-dir" NO_COLOR=1 "$deno" run --cached-only --allow-read --allow-write \
  --allow-net --allow-env --allow-sys --allow-run meshd/main.ts --help >/dev/null 2>&1)
echo "ok: deno cache filled a fresh DENO_DIR ($(du -sh "$work/deno-dir" | cut -f1))"
# proxy.run.Containerfile's bundle step; the gateway below runs from it as the image's ENTRYPOINT does.
(cd "$work/app" && DENO_DIR="$work/deno-dir" NO_COLOR=1 "$deno" task bundle:proxy >/dev/null 2>&1)
[ -f "$work/app/build/proxy/main.js" ] && [ -f "$work/app/build/proxy/workers/worker.js" ] ||
  { echo "FAIL: deno task bundle:proxy wrote no build/proxy/main.js and workers/worker.js"; exit 1; }
echo "ok: deno task bundle:proxy wrote build/proxy/main.js ($(du -h "$work/app/build/proxy/main.js" | cut -f1))"
# proxy.run.Containerfile's analysis of the bundle: Deno's caches hold it before DENO_DIR turns read-only.
(cd "$work/app" && DENO_DIR="$work/deno-dir" NO_COLOR=1 "$deno" cache build/proxy/main.js \
  build/proxy/workers/worker.js >/dev/null 2>&1 && DENO_DIR="$work/deno-dir" NO_COLOR=1 "$deno" run --cached-only \
  --allow-read --allow-env --no-code-cache build/proxy/main.js --help >/dev/null 2>&1)
deploy/kubernetes/make_cacerts.sh "$work/ca" >/dev/null
mkdir "$work/cacerts"
for f in ca-cert.pem ca-key.pem cert-chain.pem root-cert.pem token-signing-key.pem; do
  cp "$work/ca/$f" "$work/cacerts/$f"
done
# As the kubelet mounts the Secret: owner root, group fsGroup 1993, defaultMode 0440.
chown -R root:1993 "$work/cacerts" && chmod 0440 "$work/cacerts"/* && chmod 0755 "$work/cacerts"
cp deploy/kubernetes/ingress_gateway.yaml "$work/run/cfg/"
sed -n '/^  mesh: |$/,/^---$/p' deploy/kubernetes/meshd.yaml | sed '1d;$d;s/^    //' >"$work/run/mesh"
chmod -R a+rwX "$work/run"
cat >"$work/inside.sh" <<INSIDE
set -euo pipefail
ip link set lo up
for d in "$work/app" "$work/deno-dir" "$work/cacerts"; do mount --bind "\$d" "\$d"; mount -o remount,bind,ro "\$d"; done
cd "$work/app"
export DENO_DIR="$work/deno-dir" DENO_NO_UPDATE_CHECK=1 NO_COLOR=1 HOME="$work/run" ROOT_CA_DIR="$work/cacerts"
touch "$work/app/x" 2>/dev/null && { echo "FAIL: app is writable"; exit 1; }
run=(run --cached-only --allow-read --allow-env --allow-net --allow-sys)
setpriv --reuid 1993 --regid 1993 --clear-groups "$deno" "\${run[@]}" meshd/main.ts token -n mesh-system \
  --serviceAccount mesh-ingressgateway --duration 1h >"$work/run/mesh-token"
echo "ok: meshd token minted a bootstrap token from the read-only cacerts"
TOKEN_AUDIENCES=mesh-ca setpriv --reuid 1993 --regid 1993 --clear-groups "$deno" "\${run[@]}" --allow-write --allow-run \
  meshd/main.ts discovery --grpcAddr=:15010 --secureGRPCAddr=:15012 --httpsAddr=:15017 --monitoringAddr=:15014 \
  --httpAddr=127.0.0.1:8080 --meshConfig="$work/run/mesh" --configDir="$work/run/cfg" >"$work/run/meshd.log" 2>&1 &
meshd=\$!
for i in \$(seq 1 120); do
  [ "\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:15014/ready || true)" = 200 ] && break
  sleep 0.25
done
[ "\$i" -lt 120 ] || { echo "FAIL: meshd not ready"; cat "$work/run/meshd.log"; exit 1; }
grep -q "CA loaded its root in $work/cacerts" "$work/run/meshd.log" || { echo "FAIL: cacerts not loaded"; exit 1; }
echo "ok: meshd ready on :15014/ready with the read-only cacerts (\$(pgrep -c -P \$meshd) serving children; VmHWM \$(grep VmHWM /proc/\$meshd/status | tr -s " " | cut -d" " -f2-))"
POD_NAMESPACE=mesh-system INSTANCE_IP=127.0.0.1 setpriv --reuid 1993 --regid 1993 --clear-groups "$deno" "\${run[@]}" \
  --allow-ffi=/lib/x86_64-linux-gnu/libc.so.6 --v8-flags=--max-semi-space-size=1,--no-allocation-site-pretenuring --no-code-cache build/proxy/main.js \
  --type=router --discoveryAddress=127.0.0.1:15012 --discoveryServerName=meshd.mesh-system.svc \
  --serviceAccount=mesh-ingressgateway --workloadGroup=mesh-ingressgateway --instanceName=gw-1 \
  --labels=app=mesh-ingressgateway,istio=ingressgateway --tokenFile="$work/run/mesh-token" \
  --rootCertFile="$work/cacerts/root-cert.pem" >"$work/run/proxy.log" 2>&1 &
proxy=\$!
probe=\$(sed -n "s/^ *- \"\\(Deno.exit.*\\)\"$/\\1/p" "$repo/deploy/kubernetes/ingress_gateway.yaml")
for i in \$(seq 1 60); do
  setpriv --reuid 1993 --regid 1993 --clear-groups "$deno" eval "\$probe" 2>"$work/run/probe.err" && break
  sleep 0.5
done
[ "\$i" -lt 60 ] || { echo "FAIL: the gateway's readiness probe never passed"; cat "$work/run/proxy.log" "$work/run/probe.err"; exit 1; }
echo "ok: the gateway's readiness probe (deno eval, read-only DENO_DIR) passed after \$i tries"
echo "ok: the gateway's VmHWM once ready: \$(grep VmHWM /proc/\$proxy/status | tr -s ' ')"
entry=\$(curl -s http://127.0.0.1:8080/debug/registryz | grep -o '"mesh-ingressgateway-[^"]*"' | head -1)
[ -n "\$entry" ] || { echo "FAIL: no auto-registered gateway in /debug/registryz"; exit 1; }
echo "ok: the gateway auto-registered from WorkloadGroup mesh-system/mesh-ingressgateway as \$entry"
kill -TERM \$proxy \$meshd; wait \$proxy \$meshd || true
INSIDE
unshare -n -m bash "$work/inside.sh"
