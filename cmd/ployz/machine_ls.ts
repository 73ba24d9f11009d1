// `ployz machine ls`: the Machines one Machine holds rows for, with its own membership judgement of each.
import type { Command } from "../../lib/cli/mod.ts";
import { type SubnetCollision, subnetCollisions } from "../../lib/mesh/mod.ts";
import type { ListMachinesResponse, RemovedWire } from "../../lib/rpc/mod.ts";
import { retiredNotice } from "../../lib/operator/mod.ts";
import { jsonLine, openConfig, socketPath, withMachine } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions } from "./flags.ts";

/** Lines naming each subnet collision; reported, never repaired. */
export function collisionLines(collisions: readonly SubnetCollision[]): string {
  return collisions.map((c) =>
    `warning: subnet collision on ${c.subnet}: ${
      c.machines.map((m) => `"${m.name}" (${m.id}, ${m.subnet})`).join(", ")
    } (reported, not repaired)\n`
  ).join("");
}

/**
 * What a Machine its Cluster retired says of itself: who removed it, when, and what can be done (`socket`: the one
 * this CLI reaches it on).
 */
export function removedNotice(
  observer: ListMachinesResponse["observer"],
  removed: RemovedWire,
  socket: string,
): string {
  const name = observer.machine_name;
  const by = removed.by_name === undefined ? `"${removed.by}"` : `"${removed.by_name}" (${removed.by})`;
  const at = removed.at ?? "an unknown time";
  const told = removed.noticed_at ?? "an unknown time";
  return `this Machine, "${name}" (${observer.machine_id}), was removed from its Cluster by Machine ${by} at ` +
    `${at} ("machine rm --gone"); every peer refuses it and it no longer syncs (told at ${told}); its ` +
    `containers are left as they are. Its id is never admitted again: "ployz machine rm ${name} --socket ` +
    `${socket} --confirm-data-loss ${name}" on it leaves the Cluster (removing its containers); there is no ` +
    `"machine reset": only a fresh data directory (a new id) can be added again`;
}

/** The human form of a list answer. */
export function machineTable(list: ListMachinesResponse): string {
  const head =
    `Observed by "${list.observer.machine_name}" (${list.observer.machine_id}) at ${list.observed_at}\n`;
  const rows = list.machines.map((m) => [
    m.self ? `${m.name} *` : m.name,
    m.id,
    m.subnet ?? "-",
    m.phase ?? "-",
    m.membership,
    m.last_handshake_at ?? "-",
    m.last_store_traffic_at ?? "-",
    m.refused_changes === undefined ? "-" : String(m.refused_changes),
    m.endpoints.join(",") || "-",
    Object.entries(m.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(",") || "-",
    `${m.accepts_workloads === false ? "-" : "workloads"},${m.accepts_ingress === false ? "-" : "ingress"}`,
  ]);
  const rendered = table(
    [
      "NAME",
      "ID",
      "SUBNET",
      "PHASE",
      "MEMBERSHIP",
      "LAST HANDSHAKE",
      "LAST STORE TRAFFIC",
      "REFUSED",
      "ENDPOINTS",
      "LABELS",
      "ACCEPTS",
    ],
    rows,
  );
  const mesh = list.mesh_error === undefined ? "" : `mesh: ${list.mesh_error}\n`;
  return head + rendered + collisionLines(subnetCollisions(list.machines)) + mesh;
}

/** `ployz machine ls`. */
export const machineLsCommand: Command = {
  name: "ls",
  summary: "List Machines as the local Machine observes them (membership, collisions)",
  usage: "[--json]",
  options: sharedOptions("json"),
  async run({ values, io }): Promise<number> {
    const list = await withMachine((client) => client.listMachines());
    // The Machine's own word first (a peer proved it was retired); else what this operator's history recorded.
    const retired = list.removed !== undefined
      ? removedNotice(list.observer, list.removed, socketPath())
      : (() => {
        using config = openConfig();
        return retiredNotice(config.allocations(), list.observer.machine_id);
      })();
    if (values.json === true) {
      io.out(jsonLine({
        ...list,
        "subnet_collisions": subnetCollisions(list.machines),
        ...(retired === undefined ? {} : { retired }),
      }));
    } else {
      if (retired !== undefined) io.err(`warning: ${retired}\n`);
      io.out(machineTable(list));
    }
    return 0;
  },
};
