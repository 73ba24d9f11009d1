/**
 * `viaEntry`: a client of another Machine of the Cluster, reached through the Entry Machine the CLI is attached
 * to. Every call goes to `/rpc/via/<machine_id>/<capability>` on the Entry Machine's transport, which relays it
 * over the mesh; the answer, streams and errors included, is the target's own.
 *
 * @module
 */

import { connectMachine, type MachineClient, transportOf } from "./client.ts";
import { RpcError } from "./errors.ts";
import { VIA_PREFIX } from "./routing_routes.ts";

/** Options of {@link viaEntry}. */
export interface ViaEntryOptions {
  /** How errors name the target; default its id. */
  name?: string;
}

/**
 * A client of Machine `machineId` that sends every call through `entry`. It shares the Entry Machine's connection,
 * so closing it releases nothing; close `entry` when done. Throws `invalid_argument` for an `entry` not made by
 * `connectMachine`.
 */
export function viaEntry(
  entry: MachineClient,
  machineId: string,
  options: ViaEntryOptions = {},
): MachineClient {
  const transport = transportOf(entry);
  if (transport === undefined) {
    throw new RpcError(
      "invalid_argument",
      "Cannot forward through this client: it has no transport of its own",
    );
  }
  return connectMachine({
    fetch: transport.send,
    label: `${options.name ?? machineId} via ${transport.label}`,
    pathPrefix: `${VIA_PREFIX}${encodeURIComponent(machineId)}/`,
  });
}
