import { type AuthorizationCase, err, OP, testAuthorizationCases, toOperation } from "./_test_support.ts";

/** AuthorizationPolicy path templates (`{*}`, `{**}`) in operations. */
const pathCases: AuthorizationCase[] = [
  ...["/foo/{*}/bar", "/foo/{**}", "/{*}/x/{**}", "/{*}", "/foo/{*}/", "/foo/{**}/bar.css", "/a/{*}/b@c:d=e"]
    .map(
      (path): AuthorizationCase => ({
        name: `path template "${path}" passes`,
        spec: toOperation({ paths: [path] }),
        want: [],
      }),
    ),
  ...["/plain path/with spaces?and=query&x=<y>#frag", "/api/*", "*.css", "/ünïcödé/"].map((
    path,
  ): AuthorizationCase => ({
    name: `plain path with odd characters and no template "${path}" passes`,
    spec: toOperation({ paths: [path] }),
    want: [],
  })),
  ...["/foo/{**}/{*}", "/foo/{**}/bar/{**}"].map((path): AuthorizationCase => ({
    name: `path template "${path}" fails ({**} not last)`,
    spec: toOperation({ paths: [path] }),
    want: [err([...OP, "paths", 0], `invalid path "${path}": {**} must be the last template`)],
  })),
  ...["/foo/{x}", "/foo{*}", "/a/{*}b", "/a/{***}", "/a/{*", "/a/}"].map((path): AuthorizationCase => ({
    name: `path template "${path}" fails (brace outside a whole-segment template)`,
    spec: toOperation({ paths: [path] }),
    want: [err([...OP, "paths", 0], `invalid path "${path}": "{" or "}" outside a whole-segment`)],
  })),
  {
    name: 'path template with a bad literal beside it fails: "/a b/{*}"',
    spec: toOperation({ paths: ["/a b/{*}"] }),
    want: [err([...OP, "paths", 0], 'segment "a b" has characters not allowed beside a template')],
  },
  {
    name: 'path template beside an empty segment fails, as Istio: "/a//{*}"',
    spec: toOperation({ paths: ["/a//{*}"] }),
    want: [err([...OP, "paths", 0], 'segment "" has characters not allowed beside a template')],
  },
  {
    name: "path template in notPaths is checked too",
    spec: toOperation({ notPaths: ["/ok", "/foo/{x}"] }),
    want: [err([...OP, "notPaths", 1], "outside a whole-segment")],
  },
];

testAuthorizationCases(pathCases);
