import assert from "node:assert/strict";
import { ISTIO_LABELS, type IstioLabels, MAX_LABEL_SETS } from "../http/istio_metrics.ts";
import { formatIstioTcpPrometheus, IstioTcpMetrics, mergeIstioTcpSeries } from "./tcp_metrics.ts";

const LABELS = Object.fromEntries(ISTIO_LABELS.map((k) => [k, "unknown"])) as IstioLabels;
const FROM_SLEEP: IstioLabels = {
  ...LABELS,
  reporter: "destination",
  source_principal: "spiffe://cluster.local/ns/bar/sa/sleep",
  request_protocol: "http",
  connection_security_policy: "mutual_tls",
};

Deno.test("IstioTcpMetrics: counts per label set, request_protocol tcp, merged across workers", () => {
  const a = new IstioTcpMetrics();
  const b = new IstioTcpMetrics();
  const set = a.labels(FROM_SLEEP);
  assert.equal(a.labels(FROM_SLEEP), set, "interned");
  set.opened();
  set.received(100);
  set.sent(7);
  set.closed();
  const other = b.labels(FROM_SLEEP);
  other.opened();
  other.received(1);
  const [merged] = mergeIstioTcpSeries([...a.snapshot(), ...b.snapshot()]);
  assert.equal(merged.labels[ISTIO_LABELS.indexOf("request_protocol")], "tcp");
  assert.deepEqual(
    [merged.opened, merged.closed, merged.receivedBytes, merged.sentBytes],
    [2, 1, 101, 7],
  );
  const text = formatIstioTcpPrometheus([merged]);
  for (
    const line of [
      "# TYPE istio_tcp_connections_opened_total counter",
      "# TYPE istio_tcp_received_bytes_total counter",
    ]
  ) assert.ok(text.includes(line), line);
  assert.match(
    text,
    /^istio_tcp_connections_opened_total\{reporter="destination",.*source_principal="spiffe:\/\/cluster\.local\/ns\/bar\/sa\/sleep".*request_protocol="tcp",connection_security_policy="mutual_tls",response_flags="-"\} 2$/m,
  );
  assert.match(text, /^istio_tcp_connections_closed_total\{.*\} 1$/m);
  assert.match(text, /^istio_tcp_received_bytes_total\{.*\} 101$/m);
  assert.match(text, /^istio_tcp_sent_bytes_total\{.*\} 7$/m);
  assert.equal(formatIstioTcpPrometheus([]), "");
});

Deno.test("IstioTcpMetrics: label sets are bounded; further peers count as source unknown", () => {
  const m = new IstioTcpMetrics();
  for (let i = 0; i < MAX_LABEL_SETS; i++) m.labels({ ...FROM_SLEEP, source_principal: `p${i}` });
  const overflow = m.labels({ ...FROM_SLEEP, source_principal: "one too many" });
  assert.equal(overflow.values[ISTIO_LABELS.indexOf("source_principal")], "unknown");
  assert.equal(m.snapshot().length, MAX_LABEL_SETS + 1);
});
