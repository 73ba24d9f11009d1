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

/** Options of {@link meshRpcHandler}. */
export interface MeshRpcOptions {
  /** The replicated `machines` rows as they are now. */
  rows(): readonly MachineAddressRow[];
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
    if (meshCaller(remoteAddress, options.rows(), self.id) === undefined) {
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
