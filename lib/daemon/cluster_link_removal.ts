/**
 * Whether this Machine itself was retired from its Cluster: recorded earlier, or proved now by a peer's refusal
 * whose signed row checks out (see the store's removal notice). A refusal that does not check out is logged, once per
 * reason and for at most 64 reasons, and not believed.
 *
 * @module
 */

import { readRemovalNotice, type RemovalNotice, type Store } from "../store/mod.ts";

/** This Machine's own removal, as the link knows it. */
export class SelfRemoval {
  readonly #store: Store;
  readonly #log: (line: string) => void;
  readonly #doubted = new Set<string>();
  #removed: boolean;

  /** `removed`: the record already says this Machine was retired. */
  constructor(store: Store, removed: boolean, log: (line: string) => void) {
    this.#store = store;
    this.#removed = removed;
    this.#log = log;
  }

  /** Whether this Machine was retired (recorded, or proved by a peer's refusal). */
  get removed(): boolean {
    return this.#removed;
  }

  /** A peer refused this Machine as removed: the notice when that proves it now, else undefined. */
  learn(peer: string, details: Record<string, unknown>): RemovalNotice | undefined {
    if (this.#removed || this.#store.closed) return undefined;
    const notice = readRemovalNotice(this.#store, details);
    if ("reason" in notice) {
      if (this.#doubted.size < 64 && !this.#doubted.has(notice.reason)) {
        this.#doubted.add(notice.reason);
        this.#log(`mesh: ${peer} refused this Machine as removed, not believed: ${notice.reason}`);
      }
      return undefined;
    }
    this.#removed = true;
    this.#log(
      `mesh: this Machine was removed from its Cluster by Machine "${
        notice.retiredByName ?? notice.retiredBy
      }" at ${
        notice.retiredAt ?? "an unknown time"
      } ("machine rm --gone"), as ${peer} proved: it no longer syncs`,
    );
    return notice;
  }
}
