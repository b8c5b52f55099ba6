import assert from "node:assert/strict";
import * as jose from "jose";
import { join } from "node:path";
import {
  BOOTSTRAP_TOKEN_TYPE,
  BootstrapTokenIssuer,
  DEFAULT_TOKEN_DURATION_SECONDS,
  loadOrCreateTokenKey,
  parseServiceAccountSubject,
  serviceAccountSubject,
  TOKEN_KEY_FILE,
} from "./bootstrap_tokens.ts";
import { RootCaError } from "./root_ca_error.ts";
import { pythonModulesMissing, requires } from "../testing/prerequisites.ts";

async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "bootstrap-tokens-test-" });
  return { dir, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

Deno.test("token key: created on first use with mode 0600, reused afterwards", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const first = await loadOrCreateTokenKey(dir);
    assert.equal(first.created, true);
    assert.equal((await Deno.stat(join(dir, TOKEN_KEY_FILE))).mode! & 0o777, 0o600);
    assert.equal(first.privateKey.extractable, false);
    const again = await loadOrCreateTokenKey(dir);
    assert.equal(again.created, false);
    assert.equal(again.keyId, first.keyId);
    assert.deepEqual(again.publicJwk, first.publicJwk);
    assert.equal(first.publicJwk.d, undefined, "no private part in the public JWK");
  } finally {
    await cleanup();
  }
});

Deno.test("token key: meshd token (create false) refuses to create a missing key", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await assert.rejects(
      BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca"], create: false }),
      (e: unknown) => {
        assert.ok(e instanceof RootCaError);
        assert.match(e.message, /token-signing-key.pem: is missing; meshd creates it/);
        return true;
      },
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
    await loadOrCreateTokenKey(dir);
    assert.ok(await BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca"], create: false }));
  } finally {
    await cleanup();
  }
});

Deno.test("token key: a file that is not a P-256 key is an error naming it", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await Deno.writeTextFile(join(dir, TOKEN_KEY_FILE), "nonsense");
    await assert.rejects(loadOrCreateTokenKey(dir), (e: unknown) => {
      assert.ok(e instanceof RootCaError);
      assert.equal(e.file, join(dir, TOKEN_KEY_FILE));
      assert.match(e.reason, /not a readable PEM private key/);
      return true;
    });
    const rsa = await crypto.subtle.generateKey(
      {
        name: "RSASSA-PKCS1-v1_5",
        modulusLength: 2048,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: "SHA-256",
      },
      true,
      ["sign"],
    );
    await Deno.writeTextFile(join(dir, TOKEN_KEY_FILE), await jose.exportPKCS8(rsa.privateKey));
    await assert.rejects(loadOrCreateTokenKey(dir), /must hold an ECDSA P-256 key/);
  } finally {
    await cleanup();
  }
});

Deno.test("tokens: claims of a Kubernetes-style service-account token, ES256, typed, 3600 s by default", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const issuer = await BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca", "other"] });
    const now = new Date("2031-05-01T00:00:00Z");
    const t = await issuer.issue({ namespace: "foo", serviceAccount: "sleep", now });
    assert.equal(t.expiresAt.getTime(), now.getTime() + DEFAULT_TOKEN_DURATION_SECONDS * 1000);
    assert.equal(t.audience, "mesh-ca");
    const header = jose.decodeProtectedHeader(t.token);
    assert.deepEqual(header, { alg: "ES256", typ: BOOTSTRAP_TOKEN_TYPE, kid: issuer.publicJwk.kid });
    const { payload } = await jose.jwtVerify(t.token, await jose.importJWK(issuer.publicJwk, "ES256"), {
      currentDate: now,
      audience: "mesh-ca",
      issuer: "meshd",
    });
    assert.equal(payload.sub, "system:serviceaccount:foo:sleep");
    assert.equal(payload.iat, now.getTime() / 1000);
    assert.equal(payload.nbf, payload.iat);
    assert.equal(payload.exp, payload.iat! + 3600);
    assert.match(payload.jti!, /^[0-9a-f-]{36}$/);
  } finally {
    await cleanup();
  }
});

Deno.test("tokens: lifetimes outside 1 s .. max and names that are not SPIFFE segments are refused", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const issuer = await BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca"], maxDurationSeconds: 7200 });
    for (const durationSeconds of [0, -1, 1.5, 7201]) {
      await assert.rejects(
        issuer.issue({ namespace: "foo", serviceAccount: "sleep", durationSeconds }),
        RangeError,
      );
    }
    assert.ok(await issuer.issue({ namespace: "foo", serviceAccount: "sleep", durationSeconds: 7200 }));
    await assert.rejects(issuer.issue({ namespace: "foo:bar", serviceAccount: "sleep" }), /namespace/);
    await assert.rejects(issuer.issue({ namespace: "foo", serviceAccount: "" }), /service account/);
  } finally {
    await cleanup();
  }
});

Deno.test("service-account subjects round-trip; malformed ones do not parse", () => {
  assert.equal(serviceAccountSubject("foo", "sleep"), "system:serviceaccount:foo:sleep");
  assert.deepEqual(parseServiceAccountSubject("system:serviceaccount:foo:sleep"), {
    namespace: "foo",
    serviceAccount: "sleep",
  });
  for (
    const bad of [
      "system:serviceaccount:foo",
      "system:serviceaccount:foo:bar:baz",
      "user:foo:bar",
      42,
      undefined,
    ]
  ) {
    assert.equal(parseServiceAccountSubject(bad), undefined, String(bad));
  }
  assert.equal(parseServiceAccountSubject("system:serviceaccount:..:sleep"), undefined);
});

Deno.test(requires(pythonModulesMissing(["jwt", "cryptography"], "python3-jwt, python3-cryptography"), {
  name: "tokens verify with an independent JWT implementation (PyJWT)",
  async fn() {
    const { dir, cleanup } = await tempDir();
    try {
      const issuer = await BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca"] });
      const { token } = await issuer.issue({ namespace: "foo", serviceAccount: "sleep" });
      const script = `import jwt, json, sys
key = jwt.PyJWK(json.loads(sys.argv[2]))
print(json.dumps(jwt.decode(sys.argv[1], key.key, algorithms=["ES256"], audience="mesh-ca", issuer="meshd")))`;
      const out = await new Deno.Command("/usr/bin/python3", {
        args: ["-c", script, token, JSON.stringify(issuer.publicJwk)],
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      assert.equal(JSON.parse(new TextDecoder().decode(out.stdout)).sub, "system:serviceaccount:foo:sleep");
    } finally {
      await cleanup();
    }
  },
}));
