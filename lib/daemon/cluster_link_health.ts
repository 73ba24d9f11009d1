/**
 * What is not working in the Cluster link now, by part (interface, firewall, listener, peers, sync…): a failure is
 * logged once when it starts or changes, and once more when the part works again.
 *
 * @module
 */

import { messageOf } from "../util/mod.ts";

/** The link's failing parts and why. */
export class LinkHealth {
  readonly #log: (line: string) => void;
  readonly #errors = new Map<string, string>();

  /** Reports through `log`, prefixed `mesh: `. */
  constructor(log: (line: string) => void) {
    this.#log = log;
  }

  /** Records that `what` failed; logged only when this failure is new for it. */
  fail(what: string, error: unknown): void {
    const message = messageOf(error);
    if (this.#errors.get(what) !== message) this.#log(`mesh: ${what}: ${message}`);
    this.#errors.set(what, message);
  }

  /** Records that `what` works; logged when it had failed. */
  ok(what: string): void {
    if (this.#errors.delete(what)) this.#log(`mesh: ${what}: working again`);
  }

  /** Why `what` fails now, if it does. */
  error(what: string): string | undefined {
    return this.#errors.get(what);
  }

  /** Every failing part as `what: message`, joined; undefined when all work. */
  summary(): string | undefined {
    const errors = [...this.#errors].map(([what, message]) => `${what}: ${message}`);
    return errors.length === 0 ? undefined : errors.join("; ");
  }
}
