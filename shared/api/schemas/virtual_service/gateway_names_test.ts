import { type Case, fwd, testCases } from "./_test_support.ts";

/** VirtualService rules on the gateway names a VirtualService or match is bound to. */
const cases: Case[] = [
  // Gateway names
  { name: "gateways: namespace/name and mesh ok", spec: fwd({}, { gateways: ["ns/gw", "mesh"] }) },
  {
    name: "gateways: legacy name warns",
    spec: fwd({}, { gateways: ["gw.ns"] }),
    want: {
      path: "spec.gateways[0]",
      message: 'prefer the namespace/name form: "ns/gw"',
      severity: "warning",
    },
  },
  {
    name: "gateways: invalid namespace",
    spec: fwd({}, { gateways: ["Bad_NS/gw"] }),
    want: { path: "spec.gateways[0]", message: 'invalid namespace "Bad_NS"' },
  },
  {
    name: "gateways: invalid name",
    spec: fwd({}, { gateways: ["ns/g_w"] }),
    want: { path: "spec.gateways[0]", message: 'invalid gateway name "g_w"' },
  },
  {
    name: "gateways: empty part",
    spec: fwd({}, { gateways: ["ns/"] }),
    want: { path: "spec.gateways[0]", message: "cannot be empty" },
  },
  {
    name: "gateways: invalid legacy name",
    spec: fwd({}, { gateways: ["g_w"] }),
    want: { path: "spec.gateways[0]", message: 'label "g_w" invalid' },
  },
];

testCases(cases);
