import assert from "node:assert/strict";
import { join } from "node:path";
import { createSelfSignedRootCa } from "./root_ca.ts";
import { SignerClient } from "./signer_client.ts";
import { makeCsr, tempDir } from "./test_support.ts";

const DENIED = new Set(["NotCapable", "PermissionDenied"]);

async function withSigner(
  fn: (signer: SignerClient, dir: string, outside: string) => Promise<void>,
): Promise<void> {
  const { dir: parent, cleanup } = await tempDir();
  const dir = join(parent, "cacerts");
  const outside = join(parent, "outside");
  await Deno.mkdir(outside);
  await createSelfSignedRootCa(dir, {
    trustDomain: "cluster.local",
    rsaKeySize: 2048,
    ttlMs: 3_600_000 * 24,
  });
  const signer = await SignerClient.start(dir);
  try {
    await fn(signer, dir, outside);
  } finally {
    signer.close();
    await cleanup();
  }
}

function assertDenied(r: { allowed: boolean; errorName?: string; message?: string }, what: string): void {
  assert.equal(r.allowed, false, `${what} should be denied`);
  assert.ok(DENIED.has(r.errorName ?? ""), `${what}: ${r.errorName}: ${r.message}`);
}

Deno.test("signer Worker: reads ROOT_CA_DIR, and no other file", async () => {
  await withSigner(async (signer, dir, outside) => {
    assert.deepEqual(await signer.probe({ op: "read", path: join(dir, "self-signed-ca-key.pem") }), {
      allowed: true,
    });
    await Deno.writeTextFile(join(outside, "secret.txt"), "secret");
    assertDenied(
      await signer.probe({ op: "read", path: join(outside, "secret.txt") }),
      "a file beside ROOT_CA_DIR",
    );
    assertDenied(
      await signer.probe({ op: "read", path: `${dir}/../outside/secret.txt` }),
      "a path climbing out",
    );
    assertDenied(await signer.probe({ op: "read", path: "/etc/passwd" }), "/etc/passwd");
    assertDenied(
      await signer.probe({ op: "read", path: new URL(import.meta.url).pathname }),
      "its own source",
    );
  });
});

Deno.test("signer Worker: no network, not even loopback", async () => {
  await withSigner(async (signer) => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    let accepted = 0;
    const accepting = (async () => {
      for await (const conn of listener) {
        accepted++;
        conn.close();
      }
    })();
    try {
      const port = (listener.addr as Deno.NetAddr).port;
      assertDenied(await signer.probe({ op: "net", hostname: "127.0.0.1", port }), "connect to 127.0.0.1");
      assert.equal(accepted, 0);
    } finally {
      listener.close();
      await accepting.catch(() => {});
    }
  });
});

Deno.test("signer Worker: no write (not even into ROOT_CA_DIR), env, subprocess or system information", async () => {
  await withSigner(async (signer, dir, outside) => {
    assertDenied(await signer.probe({ op: "write", path: join(dir, "x.pem") }), "write into ROOT_CA_DIR");
    assertDenied(await signer.probe({ op: "write", path: join(outside, "x") }), "write elsewhere");
    assertDenied(await signer.probe({ op: "env", name: "HOME" }), "env");
    assertDenied(await signer.probe({ op: "run", command: "true" }), "run");
    assertDenied(await signer.probe({ op: "sys" }), "sys");
    assert.deepEqual([...Deno.readDirSync(outside)], []);
  });
});

Deno.test("signer Worker: signs inside its sandbox", async () => {
  await withSigner(async (signer) => {
    const { csrPem } = await makeCsr();
    const chain = await signer.sign({
      csrPem,
      spiffeId: "spiffe://cluster.local/ns/foo/sa/sleep",
      ttlSeconds: 60,
    });
    assert.equal(chain.length, 2);
    assert.equal(chain[1], signer.bundle.rootCertPem);
  });
});
