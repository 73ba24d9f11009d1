/**
 * The Cluster link's listener on the Machine Gateway, port 51000: store sync for the Cluster's Machines and, when
 * given, Machine RPC on the mesh. A retired Machine (a quarantined peer) gets one answer to every request: who
 * retired it and when, with the signed row. The link opens it only while the firewall guards the port.
 *
 * @module
 */

import { parseMachineSubnet, type QuarantinedPeer } from "../mesh/mod.ts";
import { createSyncApp, removedRefusal, type Store } from "../store/mod.ts";
import { messageOf } from "../util/mod.ts";
import type { LinkHealth } from "./cluster_link_health.ts";
import { SYNC_PORT } from "./mesh_settings.ts";
import type { RefusalLog } from "./peer_evidence.ts";

/** Machine RPC on the mesh listener (paths under `/rpc/`), given the caller's address. */
export type MeshRpc = (
  request: Request,
  remoteAddress: string,
  signal: AbortSignal,
) => Response | Promise<Response>;

/** How the listener answers one request. */
export type MeshRoute =
  /** A retired Machine: told it was removed (in Machine RPC's error body when it called RPC). */
  | { kind: "removed"; machineId: string; rpc: boolean }
  /** Store sync from an address that is no Machine of this Cluster. */
  | { kind: "unauthenticated" }
  /** Machine RPC, which checks its caller itself. */
  | { kind: "rpc" }
  /** Store sync, from the Machine `caller` (undefined only for an RPC path while no RPC is served). */
  | { kind: "sync"; caller: string | undefined };

/**
 * Decides how a request on the mesh port is answered: a quarantined address is refused as removed; store sync is
 * answered only to the Cluster's Machines, by the same caller check as Machine RPC.
 */
export function routeMeshRequest(
  path: string,
  remote: string,
  who: {
    quarantine: readonly QuarantinedPeer[];
    caller(address: string): string | undefined;
    servesRpc: boolean;
  },
): MeshRoute {
  const rpcPath = path.startsWith("/rpc/");
  const quarantined = who.quarantine.find((q) => q.address === `${remote}/32`);
  if (quarantined !== undefined) return { kind: "removed", machineId: quarantined.machineId, rpc: rpcPath };
  const caller = rpcPath ? undefined : who.caller(remote);
  if (!rpcPath && caller === undefined) return { kind: "unauthenticated" };
  if (who.servesRpc && rpcPath) return { kind: "rpc" };
  return { kind: "sync", caller };
}

/** What the listener reads from its link. */
export interface MeshListenerOptions {
  store: Store;
  /** This Machine's subnet; the listener binds its gateway. */
  subnet: string;
  rpc?: MeshRpc;
  /** Ends the listener with the link. */
  signal: AbortSignal;
  health: LinkHealth;
  refusals: RefusalLog;
  log: (line: string) => void;
  /** Retired Machines held to this port. */
  quarantine(): readonly QuarantinedPeer[];
  /** The peer Machine an address belongs to. */
  caller(address: string): string | undefined;
  /** Notes traffic from an address (store traffic evidence). */
  noteAddress(address: string): void;
}

/** The mesh port's listener; see the module comment. */
export class MeshListener {
  readonly #options: MeshListenerOptions;
  #server: Deno.HttpServer | undefined;
  #abort: AbortController | undefined;
  readonly #closing: Promise<void>[] = [];
  // The Machine each sync request came from, by its caller address: a push names its sender's site itself.
  readonly #callers = new WeakMap<Request, string>();

  /** A closed listener; {@link MeshListener.open} opens it. */
  constructor(options: MeshListenerOptions) {
    this.#options = options;
  }

  /** Whether it listens now. */
  get listening(): boolean {
    return this.#server !== undefined;
  }

  /** Opens the listener unless it is open or the link stopped; a failure is reported as the `listener` part. */
  open(): void {
    const { store, signal, health, refusals } = this.#options;
    if (this.#server !== undefined || signal.aborted) return;
    const gateway = parseMachineSubnet(this.#options.subnet).gateway;
    const app = createSyncApp(store, {
      onRejected: (site, rejected, request) =>
        refusals.note(`Machine "${site.slice(0, 64)}"`, rejected, this.#callers.get(request)),
    });
    const abort = new AbortController();
    try {
      this.#server = Deno.serve({
        hostname: gateway,
        port: SYNC_PORT,
        signal: AbortSignal.any([signal, abort.signal]),
        onListen: () => {},
      }, (request, info) => this.#answer(app, request, info));
      this.#abort = abort;
      health.ok("listener");
      this.#options.log(
        `mesh: store sync${
          this.#options.rpc === undefined ? "" : " and Machine RPC"
        } listening on ${gateway}:${SYNC_PORT}`,
      );
    } catch (error) {
      health.fail("listener", new Error(`cannot listen on ${gateway}:${SYNC_PORT}: ${messageOf(error)}`));
    }
  }

  /** Closes the listener because the firewall does not guard the port. */
  close(): void {
    if (this.#server === undefined) return;
    this.#abort?.abort();
    this.#closing.push(this.#server.finished);
    this.#server = undefined;
    this.#options.log(`mesh: listener closed: the firewall does not guard port ${SYNC_PORT}`);
  }

  /** Resolves once every listener this one opened has finished (the link's signal ends the open one). */
  async finished(): Promise<void> {
    await this.#server?.finished;
    await Promise.all(this.#closing);
    this.#server = undefined;
  }

  #answer(
    app: { fetch(request: Request): Response | Promise<Response> },
    request: Request,
    info: Deno.ServeHandlerInfo,
  ): Response | Promise<Response> {
    const remote = (info.remoteAddr as Deno.NetAddr).hostname;
    this.#options.noteAddress(remote);
    const route = routeMeshRequest(new URL(request.url).pathname, remote, {
      quarantine: this.#options.quarantine(),
      caller: this.#options.caller,
      servesRpc: this.#options.rpc !== undefined,
    });
    switch (route.kind) {
      case "removed":
        return this.#refuseRemoved(route.machineId, route.rpc);
      case "unauthenticated":
        return Response.json({
          code: "unauthenticated",
          message: `Store sync is served only to this Cluster's Machines: "${remote}" is not one`,
        }, { status: 401 });
      case "rpc": {
        // Ends follows and relays once the answer is delivered or the caller went away.
        const call = new AbortController();
        info.completed.then(() => call.abort(), () => call.abort());
        return this.#options.rpc!(request, remote, call.signal);
      }
      case "sync":
        this.#callers.set(request, route.caller!);
        return app.fetch(request);
    }
  }

  // Every request of a retired Machine gets one answer: who retired it and when, with the signed row.
  // Machine RPC wraps its error body in `error`; store sync does not.
  async #refuseRemoved(machineId: string, rpc: boolean): Promise<Response> {
    const store = this.#options.store;
    const refusal = (store.closed ? undefined : await removedRefusal(store, machineId)) ??
      { code: "unauthenticated", message: `Machine "${machineId}" was removed from this Cluster` };
    return Response.json(rpc ? { error: refusal } : refusal, { status: 401 });
  }
}
