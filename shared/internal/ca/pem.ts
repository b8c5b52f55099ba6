/**
 * PEM text: splitting a file into its blocks and encoding DER as PEM. Nothing here parses the
 * certificates or keys inside; that is {@link ./root_ca.ts} and {@link ./keys.ts}.
 *
 * @module
 */

/** One `-----BEGIN <label>----- ... -----END <label>-----` block. */
export interface PemBlock {
  /** The label, e.g. `CERTIFICATE`, `PRIVATE KEY`, `EC PRIVATE KEY`. */
  label: string;
  /** The decoded body. */
  der: Uint8Array;
  /** The block as it appears in the text, normalised to `\n` line ends and a final newline. */
  pem: string;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END ([A-Z0-9 ]+)-----/g;

/**
 * Every PEM block in `text`, in order. Text between blocks (comments, `openssl` "Bag Attributes")
 * is ignored, as Go's `pem.Decode` does.
 *
 * @throws {Error} for a block whose END label differs from its BEGIN label or whose body is not base64
 */
export function parsePemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  for (const m of text.matchAll(BLOCK)) {
    const [, begin, body, end] = m;
    if (begin !== end) throw new Error(`PEM block "BEGIN ${begin}" ends with "END ${end}"`);
    // Encapsulated headers (Proc-Type, DEK-Info) mark legacy encrypted keys; keep them visible.
    const lines = body.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "");
    if (lines.some((l) => l.includes(":"))) {
      throw new Error(
        `PEM block "${begin}" has headers (${lines.find((l) => l.includes(":"))}); ` +
          "encrypted keys are not supported",
      );
    }
    const b64 = lines.join("");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) {
      throw new Error(`PEM block "${begin}" is not valid base64`);
    }
    const der = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    blocks.push({ label: begin, der, pem: toPem(der, begin) });
  }
  return blocks;
}

/** The `CERTIFICATE` blocks of `text`, in order; other blocks are skipped. */
export function pemCertificates(text: string): PemBlock[] {
  return parsePemBlocks(text).filter((b) => b.label === "CERTIFICATE");
}

/** Encodes DER as a PEM block with 64-character lines and a final newline. */
export function toPem(der: Uint8Array | ArrayBuffer, label: string): string {
  const bytes = der instanceof Uint8Array ? der : new Uint8Array(der);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  const b64 = btoa(bin);
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
