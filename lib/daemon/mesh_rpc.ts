/**
 * Machine RPC on the mesh: the same catalog and handlers as the local socket, served on the Machine Gateway port
 * 51000 beside store sync. The firewall already admits that port only from the WireGuard interface; on top of that
 * a call is answered only when it comes from a known Machine's own address: the gateway of a subnet in a
 * replicated `machines` row (where that Machine's daemon connects from) or its management address. A container on
 * another Machine, or anything else that got a packet through, is refused `unauthenticated`. A call that arrived
 * over the mesh is never forwarded again, so a relay is one hop.
 *
 * @module
 */

import { managementAddress, parseMachineSubnet } from "../mesh/mod.ts";
import { parseViaPath, RpcError, VIA_PREFIX } from "../rpc/mod.ts";
import type { CommitEvent, Store } from "../store/mod.ts";
import { errorResponse } from "./forward.ts";

/** The fields of a `machines` row the allow-list reads. */
export interface MachineAddressRow {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name?: string;
  /** Its Machine Subnet. */
  subnet?: string;
  /** Its WireGuard public key. */
  "public_key"?: string;
}

/** Strips an IPv4-mapped IPv6 prefix and brackets, so one spelling compares. */
function canonical(address: string): string {
  const bare = address.replace(/^\[|\]$/g, "").toLowerCase();
  return bare.startsWith("::ffff:") && bare.includes(".") ? bare.slice(7) : bare;
}

/** The Machine a caller address belongs to (its gateway or management address), or `undefined`. */
export function meshCaller(
  address: string,
  rows: readonly MachineAddressRow[],
  selfId: string,
): MachineAddressRow | undefined {
  const caller = canonical(address);
  for (const row of rows) {
    if (row.id === selfId) continue;
    if (row.subnet !== undefined) {
      try {
        if (parseMachineSubnet(row.subnet).gateway === caller) return row;
      } catch {
        // an unreadable subnet admits nobody
      }
    }
    if (row.public_key !== undefined) {
      try {
        if (canonical(managementAddress(row.public_key)) === caller) return row;
      } catch {
        // an unreadable key admits nobody
      }
    }
  }
  return undefined;
}

/** The tables whose rows decide who a mesh caller is. */
const CALLER_TABLES: ReadonlySet<string> = new Set(["machines", "retired_machines"]);

/**
 * Whether a commit can change who a mesh caller is: it wrote a row of `machines` or `retired_machines`, or names no
 * change at all (a full copy taken from a peer, the store closing), which could have touched anything.
 */
export function touchesMachines(event: CommitEvent): boolean {
  return event.changes.length === 0 || event.changes.some((c) => CALLER_TABLES.has(c.table));
}

/**
 * {@link meshCaller} over rows that change rarely: every row's gateway and management address are indexed when
 * first asked after {@link CallerIndex.invalidate}, so a request costs one lookup instead of reading the rows and
 * decoding every WireGuard key. The first row holding an address wins, as in {@link meshCaller}.
 */
export class CallerIndex {
  readonly #rows: () => readonly MachineAddressRow[];
  #index: Map<string, MachineAddressRow> | undefined;
  #selfId = "";

  /** An index over what `rows` returns, read again on the first question after each invalidation. */
  constructor(rows: () => readonly MachineAddressRow[]) {
    this.#rows = rows;
  }

  /** Forgets the index: the next question reads the rows again. */
  invalidate(): void {
    this.#index = undefined;
  }

  /** The row a caller address belongs to (its gateway or management address), or `undefined`. */
  caller(address: string, selfId: string): MachineAddressRow | undefined {
    if (this.#index === undefined || this.#selfId !== selfId) {
      const index = new Map<string, MachineAddressRow>();
      for (const row of this.#rows()) {
        if (row.id === selfId) continue;
        for (const own of addressesOf(row)) if (!index.has(own)) index.set(own, row);
      }
      this.#index = index;
      this.#selfId = selfId;
    }
    return this.#index.get(canonical(address));
  }
}

/** A row's gateway and management address, canonical; an unreadable subnet or key gives none. */
function addressesOf(row: MachineAddressRow): string[] {
  const out: string[] = [];
  if (row.subnet !== undefined) {
    try {
      out.push(parseMachineSubnet(row.subnet).gateway);
    } catch {
      // an unreadable subnet admits nobody
    }
  }
  if (row.public_key !== undefined) {
    try {
      out.push(canonical(managementAddress(row.public_key)));
    } catch {
      // an unreadable key admits nobody
    }
  }
  return out;
}

/**
 * A {@link CallerIndex} over the live `machines` rows of whichever store is current (the daemon's store comes and
 * goes with joining and leaving), invalidated by every commit that {@link touchesMachines}: a change in the Machine
 * list or a key is seen on the next request.
 */
export function storeCallers(
  current: () => Store | undefined,
): (address: string, selfId: string) => MachineAddressRow | undefined {
  let watched: Store | undefined;
  let unsubscribe = (): void => {};
  const index = new CallerIndex(() => watched === undefined || watched.closed ? [] : watched.liveMachines());
  return (address, selfId) => {
    const store = current();
    if (store !== watched) {
      unsubscribe();
      unsubscribe = () => {};
      watched = store;
      index.invalidate();
      if (store !== undefined && !store.closed) {
        const off = store.onCommit((event) => {
          if (touchesMachines(event)) index.invalidate();
        });
        unsubscribe = () => void off();
      }
    }
    return index.caller(address, selfId);
  };
}

/** Options of {@link meshRpcHandler}. */
export interface MeshRpcOptions {
  /** The Machine a caller address belongs to, from the replicated `machines` rows as they are now. */
  caller(address: string, selfId: string): MachineAddressRow | undefined;
  /** This Machine's id and name. */
  self(): { id: string; name: string };
  /** The Machine RPC app. */
  fetch(request: Request, signal: AbortSignal): Response | Promise<Response>;
}

function capabilityOf(path: string): string {
  const via = parseViaPath(path);
  if (via !== undefined) return via.capability;
  return path.startsWith("/rpc/") ? decodeURIComponent(path.slice(5)) : path;
}

/** Answers Machine RPC arriving over the mesh from `remoteAddress`. */
export function meshRpcHandler(
  options: MeshRpcOptions,
): (request: Request, remoteAddress: string, signal: AbortSignal) => Response | Promise<Response> {
  return (request, remoteAddress, signal) => {
    const path = new URL(request.url).pathname;
    const capability = capabilityOf(path);
    const self = options.self();
    if (options.caller(remoteAddress, self.id) === undefined) {
      return errorResponse(
        new RpcError(
          "unauthenticated",
          `Machine "${self.name}" answers Machine RPC on the mesh only from its Cluster's Machines: "${remoteAddress}" is not one`,
          { details: { capability, address: remoteAddress } },
        ),
      );
    }
    if (path.startsWith(VIA_PREFIX)) {
      return errorResponse(
        new RpcError(
          "unsupported",
          `Machine "${self.name}" does not forward a call that arrived over the mesh: forwarding is one hop`,
          { details: { capability } },
        ),
      );
    }
    return options.fetch(request, signal);
  };
}
