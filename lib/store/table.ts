/**
 * Typed access to one replicated table of a {@linkcode Store}: reads are local, writes become changes.
 *
 * @module
 */

import type { Change } from "./change.ts";
import type { TableSpec } from "./tables.ts";
import type { Store } from "./store.ts";

/** Typed access to one replicated table. Reads are local; writes become changes. */
export class Table<T extends Record<string, unknown>> {
  readonly #store: Store;
  readonly #spec: TableSpec;

  /** Use the accessors on {@linkcode Store} instead. */
  constructor(store: Store, spec: TableSpec) {
    this.#store = store;
    this.#spec = spec;
  }

  /** The table name. */
  get name(): string {
    return this.#spec.name;
  }

  /** The key a body is stored under. */
  keyOf(body: T): string {
    return this.#spec.keyOf(body);
  }

  /** The live body stored under `key`, with any fields this release does not know kept. */
  get(key: string): T | undefined {
    const text = this.#store.readBody(this.#spec.name, key);
    return text === undefined ? undefined : JSON.parse(text) as T;
  }

  /** Live bodies, optionally only those whose top-level string fields equal `where`. */
  list(where: Partial<Record<string, string>> = {}): T[] {
    return this.#store.listBodies(this.#spec.name, where).map((text) => JSON.parse(text) as T);
  }

  /** Writes a body under its key and returns the change it produced. */
  put(body: T): Change {
    return this.#store.writeLocal(this.#spec, this.#spec.keyOf(body), body);
  }

  /** Writes a tombstone for `key` and returns the change it produced. */
  delete(key: string): Change {
    return this.#store.writeLocal(this.#spec, key, null);
  }
}
