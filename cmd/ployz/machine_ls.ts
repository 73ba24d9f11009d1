// `ployz machine ls`: the Machines one Machine holds rows for, with its own membership judgement of each.
import type { Command } from "../../lib/cli/mod.ts";
import { type SubnetCollision, subnetCollisions } from "../../lib/mesh/mod.ts";
import type { ListMachinesResponse } from "../../lib/rpc/mod.ts";
import { retiredNotice } from "../../lib/operator/mod.ts";
import { jsonLine, openConfig, withMachine } from "./connect.ts";
import { columns } from "./machine_target.ts";

/** Lines naming each subnet collision; reported, never repaired. */
export function collisionLines(collisions: readonly SubnetCollision[]): string {
  return collisions.map((c) =>
    `warning: subnet collision on ${c.subnet}: ${
      c.machines.map((m) => `"${m.name}" (${m.id}, ${m.subnet})`).join(", ")
    } (reported, not repaired)\n`
  ).join("");
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
  const table = columns(
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
  return head + table + collisionLines(subnetCollisions(list.machines)) + mesh;
}

/** `ployz machine ls`. */
export const machineLsCommand: Command = {
  name: "ls",
  summary: "List Machines as the local Machine observes them (membership, collisions)",
  usage: "[--json]",
  options: { json: { type: "boolean" } },
  async run({ values, io }): Promise<number> {
    const list = await withMachine((client) => client.listMachines());
    const config = openConfig();
    const retired = (() => {
      try {
        return retiredNotice(config.allocations(), list.observer.machine_id);
      } finally {
        config.close();
      }
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
