/**
 * The single writer of dns.json: renders the projection and writes it atomically only when what the DNS process
 * serves (listen, upstreams, services) changed, so `generated_at` alone never causes a reload.
 *
 * @module
 */

import { type DnsSpecInput, renderDnsSpec, writeDnsSpec } from "../dns/writer/mod.ts";

/** Writes dns.json for a projection when it differs from the last one written. */
export class DnsSpecWriter {
  readonly #path: string;
  #last: string | undefined;

  /** A writer for `path` (e.g. `/run/ployz/dns.json`). */
  constructor(path: string) {
    this.#path = path;
  }

  /** The file written. */
  get path(): string {
    return this.#path;
  }

  /** Writes when changed; resolves true when the file now holds this projection. Throws on a write failure. */
  async write(input: DnsSpecInput): Promise<boolean> {
    const spec = renderDnsSpec(input);
    const { generated_at: _g, ...served } = spec;
    const text = JSON.stringify(served);
    if (text === this.#last) return true;
    await writeDnsSpec(this.#path, spec);
    this.#last = text;
    return true;
  }
}
