import { type Case, http, testCases, to } from "./_test_support.ts";

/** VirtualService rules on destinations and weights. */
const cases: Case[] = [
  // Destinations
  {
    name: "destinations: weights ok",
    spec: http({ route: [to("reviews", { weight: 75 }), to("reviews", { weight: 25 })] }),
  },
  {
    name: "destinations: negative weight",
    spec: http({ route: [to("reviews", { weight: -1 })] }),
    want: { path: "spec.http[0].route[0].weight", message: "must not be negative" },
  },
  {
    name: "destinations: several need weights",
    spec: http({ route: [to("reviews"), to("ratings")] }),
    want: { path: "spec.http[0].route", message: "total destination weight is 0" },
  },
  {
    name: "destinations: host * not allowed",
    spec: http({ route: [to("*")] }),
    want: { path: "spec.http[0].route[0].destination.host", message: 'cannot be "*"' },
  },
  {
    name: "destinations: invalid host",
    spec: http({ route: [to("reviews..svc")] }),
    want: { path: "spec.http[0].route[0].destination.host", message: 'label "" invalid' },
  },
  {
    name: "destinations: subset name",
    spec: http({ route: [{ destination: { host: "reviews", subset: "V_1" } }] }),
    want: { path: "spec.http[0].route[0].destination.subset", message: "invalid subset name" },
  },
];

testCases(cases);
