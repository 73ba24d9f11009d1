/**
 * What found and join check before a Machine enters a Cluster: the subnet is a /24 in a private range, and the
 * Machine is not already in a Cluster, unless it is already in the one asked for (found and join are idempotent).
 * Also what leave checks before it removes anything, and the bootstrap peers a joining record names.
 *
 * @module
 */

import type { JoinRequest, LeaveRequest } from "../rpc/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import type { FoundRequest } from "./cluster_lifecycle_deps.ts";
import type { PeerHint } from "./cluster_link.ts";
import type { LocalMachine } from "./machine_file.ts";
import { DEFAULT_SUBNET, inPrivateRange, type MachineSubnet, parseSubnet, PRIVATE_RANGES } from "./subnet.ts";

// A Machine only reaches its peers' sync port and answers its containers' DNS inside the private ranges (the
// serve and dns permission sets): a Cluster founded elsewhere would come up and then fail silently.
function refuseOutsidePrivateRanges(subnet: MachineSubnet): void {
  if (inPrivateRange(subnet)) return;
  throw new RpcError(
    "invalid_argument",
    `Invalid subnet "${subnet.subnet}": a Machine subnet must lie in a private range (${
      PRIVATE_RANGES.join(", ")
    })`,
    { details: { field: "subnet" } },
  );
}

/** What a check allows: enter with this subnet, or nothing to do (the Machine is already where it was asked). */
export type EntryCheck = { subnet: MachineSubnet } | { already: LocalMachine };

/**
 * Checks a found: the subnet (default {@linkcode DEFAULT_SUBNET}) is a /24; a participating Machine whose Cluster
 * matches every field asked is already founded; any other phase, or a mismatch, is a `conflict` naming the field.
 */
export function checkFound(record: LocalMachine, req: FoundRequest): EntryCheck {
  const subnet = parseSubnet(req.subnet ?? DEFAULT_SUBNET);
  if (subnet === undefined) {
    throw new RpcError(
      "invalid_argument",
      `Invalid subnet "${req.subnet}": expected an IPv4 /24 such as "${DEFAULT_SUBNET}"`,
      { details: { field: "subnet" } },
    );
  }
  refuseOutsidePrivateRanges(subnet);
  if (record.phase === "participating") {
    const clash = [
      ["cluster_name", req.clusterName, record.cluster_name],
      ["subnet", req.subnet === undefined ? undefined : subnet.subnet, record.subnet],
      ["machine_name", req.machineName, record.name],
    ].find(([, asked, held]) => asked !== undefined && asked !== held);
    if (clash === undefined) return { already: record };
    const [field, asked, held] = clash;
    throw new RpcError(
      "conflict",
      `Machine "${record.name}" already belongs to Cluster "${record.cluster_name}" (id "${record.cluster_id}"): ${field} is "${held}", not "${asked}"`,
      { details: { field, "cluster_id": record.cluster_id ?? "" } },
    );
  }
  if (record.phase !== "uninitialized") {
    throw new RpcError(
      "conflict",
      `Machine "${record.name}" is ${record.phase} in Cluster "${record.cluster_name}": it cannot found another`,
      { details: { phase: record.phase, "cluster_id": record.cluster_id ?? "" } },
    );
  }
  return { subnet };
}

/**
 * Checks a join: the subnet is a /24; a Machine already in the asked Cluster with the asked subnet has nothing to
 * do; one in any other Cluster is a `conflict`.
 */
export function checkJoin(record: LocalMachine, req: JoinRequest): EntryCheck {
  const subnet = parseSubnet(req.subnet);
  if (subnet === undefined) {
    throw new RpcError("invalid_argument", `Invalid subnet "${req.subnet}": expected an IPv4 /24`, {
      details: { field: "subnet" },
    });
  }
  refuseOutsidePrivateRanges(subnet);
  if (record.phase !== "uninitialized") {
    if (record.cluster_id === req.cluster_id && record.subnet === subnet.subnet) return { already: record };
    throw new RpcError(
      "conflict",
      `Machine "${record.name}" is already ${record.phase} in Cluster "${record.cluster_name}" (id "${record.cluster_id}") with subnet "${record.subnet}"`,
      { details: { "cluster_id": record.cluster_id ?? "", phase: record.phase } },
    );
  }
  return { subnet };
}

/**
 * Refuses a leave while this Machine runs Ployz containers, unless `confirm_data_loss` names the Machine: leaving
 * removes them (Data Loss).
 */
export function checkLeave(
  record: LocalMachine,
  owned: readonly { name: string }[],
  req: LeaveRequest,
): void {
  if (owned.length === 0 || req.confirm_data_loss === record.name) return;
  const names = owned.map((c) => c.name);
  throw new RpcError(
    "conflict",
    `Machine "${record.name}" runs ${owned.length} Ployz container(s) (${names.slice(0, 5).join(", ")}${
      names.length > 5 ? ", …" : ""
    }): leaving removes them (Data Loss); confirm with the Machine's name`,
    { details: { containers: names, "machine_name": record.name } },
  );
}

/** The bootstrap peers a joining record names, as link hints; malformed entries are skipped. */
export function bootstrapHints(record: LocalMachine): PeerHint[] {
  const peers = record.bootstrap_peers;
  if (!Array.isArray(peers)) return [];
  return peers.flatMap((p) => {
    if (p === null || typeof p !== "object") return [];
    const { id, "public_key": publicKey, subnet, endpoints } = p as Record<string, unknown>;
    if (typeof id !== "string" || typeof publicKey !== "string" || typeof subnet !== "string") return [];
    return [{
      machineId: id,
      publicKey,
      subnet,
      endpoints: Array.isArray(endpoints) ? endpoints.filter((e): e is string => typeof e === "string") : [],
    }];
  });
}
