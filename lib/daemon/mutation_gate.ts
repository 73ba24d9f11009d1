/**
 * The Machine-local interlock between mutations and upgrades (issue #822: "refuse upgrades while relevant local
 * mutations are active and reject new mutations during activation"). Not a Cluster-wide lock, not a queue: a
 * refused caller gets `busy` and decides itself whether to retry.
 *
 * Two halves. This gate counts the mutations the daemon is serving right now (container ensure/start/stop/remove,
 * init, join, leave); an upgrade request over RPC is admitted only when the count is zero, and while it is being
 * admitted new mutations are refused. Once admitted, the attempt's record is the evidence: every mutation first
 * asks lib/installer for a running attempt (any path — local command, SSH or RPC — writes one) and is refused
 * while there is one. The whole running attempt counts as activation, not only the stages after the swap, because
 * the worker runs outside the daemon and cannot see this count: a mutation admitted during the download could
 * still be in flight when the worker restarts the daemon. Attempts are bounded (the worker unit's RuntimeMaxSec),
 * so the refusal is too.
 *
 * @module
 */

import { RpcError } from "../rpc/mod.ts";

/** Counts in-flight mutations and upgrade admissions. */
export class MutationGate {
  #next = 0;
  readonly #active = new Map<number, string>();
  #admitting = 0;

  /** Capabilities of the mutations in flight, oldest first. */
  active(): string[] {
    return [...this.#active.values()];
  }

  /**
   * Counts a mutation in; call the returned function when it ends. Refuses `busy` while an upgrade is being
   * admitted.
   */
  enter(capability: string, machineName: string): () => void {
    if (this.#admitting > 0) {
      throw new RpcError(
        "busy",
        `Cannot serve "${capability}" on Machine "${machineName}": an upgrade is being admitted; retry shortly`,
        { details: { "upgrade_admission": true } },
      );
    }
    const id = this.#next++;
    this.#active.set(id, capability);
    return () => this.#active.delete(id);
  }

  /** Runs `admit` with new mutations refused; refuses `busy` at once while any mutation is in flight. */
  async admitUpgrade<T>(machineName: string, admit: () => Promise<T>): Promise<T> {
    const active = this.active();
    if (active.length > 0) {
      throw new RpcError(
        "busy",
        `Cannot upgrade Machine "${machineName}": ${active.length} mutation(s) in flight (${
          [...new Set(active)].join(", ")
        }); retry when they finish`,
        { details: { "active_mutations": active } },
      );
    }
    this.#admitting++;
    try {
      return await admit();
    } finally {
      this.#admitting--;
    }
  }
}
