/**
 * `ployz.machine.list.v1`: every Machine row this Machine holds, each with this Machine's own judgement of it
 * (unknown / up / suspect / down from its WireGuard handshakes, the store traffic it received, and the bytes its
 * interface counted from the peer, keepalives included). It is one
 * observation at one time, named as such; nothing here claims the Cluster's view.
 *
 * @module
 */

import { type MembershipThresholds, observeMembership } from "../mesh/mod.ts";
import type { ListedMachine, ListMachinesResponse } from "../rpc/mod.ts";
import type { Machine } from "../store/mod.ts";
import type { PeerEvidence } from "./peer_evidence.ts";

/** Builds the list answer from the rows and the evidence; pure. */
export function listMachines(input: {
  self: { id: string; name: string };
  rows: readonly Machine[];
  evidence: PeerEvidence;
  thresholds: MembershipThresholds;
  now: number;
  meshError?: string;
}): ListMachinesResponse {
  const { evidence, now } = input;
  const iso = (ms: number | undefined): string | undefined =>
    ms === undefined ? undefined : new Date(ms).toISOString();
  const machines = input.rows.map((row): ListedMachine => {
    const self = row.id === input.self.id;
    const latestHandshake = row.public_key === undefined
      ? undefined
      : evidence.handshakes.get(row.public_key);
    const lastStoreTraffic = evidence.traffic.get(row.id);
    const lastReceived = row.public_key === undefined ? undefined : evidence.received.get(row.public_key);
    // Any authenticated packet from the peer proves it as well as store traffic does.
    const traffic = Math.max(lastStoreTraffic ?? -Infinity, lastReceived ?? -Infinity);
    const out: ListedMachine = {
      id: row.id,
      name: row.name,
      endpoints: row.endpoints ?? [],
      membership: self ? "up" : observeMembership({
        now,
        latestHandshake,
        lastStoreTraffic: Number.isFinite(traffic) ? traffic : undefined,
      }, input.thresholds),
    };
    if (row.subnet !== undefined) out.subnet = row.subnet;
    if (typeof row.phase === "string") out.phase = row.phase;
    if (row.public_key !== undefined) out["public_key"] = row.public_key;
    if (typeof row.signing_key === "string") out["signing_key"] = row.signing_key;
    // Another Machine's row is untrusted input: only a string map is shown.
    if (row.labels !== null && typeof row.labels === "object" && !Array.isArray(row.labels)) {
      const labels = Object.entries(row.labels as Record<string, unknown>)
        .filter((e): e is [string, string] => typeof e[1] === "string");
      if (labels.length > 0) out.labels = Object.fromEntries(labels);
    }
    if (typeof row.accepts_workloads === "boolean") out["accepts_workloads"] = row.accepts_workloads;
    if (typeof row.accepts_ingress === "boolean") out["accepts_ingress"] = row.accepts_ingress;
    if (self) out.self = true;
    const handshake = iso(latestHandshake);
    if (handshake !== undefined) out["last_handshake_at"] = handshake;
    const store = iso(lastStoreTraffic);
    if (store !== undefined) out["last_store_traffic_at"] = store;
    const received = iso(lastReceived);
    if (received !== undefined) out["last_received_at"] = received;
    const refused = evidence.refused?.get(row.id);
    if (!self && evidence.refused !== undefined) out["refused_changes"] = refused ?? 0;
    return out;
  });
  machines.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  const answer: ListMachinesResponse = {
    observer: { "machine_id": input.self.id, "machine_name": input.self.name },
    "observed_at": new Date(now).toISOString(),
    machines,
  };
  const error = input.meshError ?? evidence.error;
  if (error !== undefined) answer["mesh_error"] = error;
  return answer;
}
