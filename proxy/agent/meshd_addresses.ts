/**
 * meshd's addresses as the proxy is given them: one `host:port`, or several separated by commas, one
 * per meshd replica (issue 14, item 4: "proxies given several meshd addresses fail over between
 * them"). Istio's pilot-agent dials one address, istiod's Service, and leaves the choice of replica to
 * the Service; a list does the same without a Service in between (the lab, VMs). A DNS name that
 * resolves to several addresses (a Kubernetes headless Service) is one entry: each connect (node:net,
 * meshd_dial.ts) looks the name up again and dials the address the lookup gives.
 *
 * @module
 */

/**
 * The addresses in `value`, in the order given: split at commas, trimmed, empty entries and
 * duplicates dropped.
 *
 * @param value `host:port[,host:port...]`, or the list itself
 * @returns at least one address
 * @throws Error when no address is left
 */
export function meshdAddresses(value: string | readonly string[]): string[] {
  const items = typeof value === "string" ? value.split(",") : value;
  const list = [...new Set(items.map((a) => a.trim()).filter((a) => a !== ""))];
  if (list.length === 0) throw new Error(`no meshd address in ${JSON.stringify(value)}`);
  return list;
}

/**
 * A round of addresses to fail over between: {@link current} is the one to dial, {@link failed} moves
 * to the next after a failure, wrapping around. A success keeps the position, so a proxy stays with
 * the replica that answers.
 */
export class AddressRing {
  readonly addresses: readonly string[];
  #index = 0;

  /** @param value as {@link meshdAddresses} takes it */
  constructor(value: string | readonly string[]) {
    this.addresses = Object.freeze(meshdAddresses(value));
  }

  /** The address to dial now. */
  get current(): string {
    return this.addresses[this.#index];
  }

  /** Moves on after `address` failed (ignored when the ring has already moved past it); returns the next. */
  failed(address: string = this.current): string {
    if (address === this.current) this.#index = (this.#index + 1) % this.addresses.length;
    return this.current;
  }
}
