/**
 * The machine routes of Machine RPC (`ployz.machine.*`): what this daemon is and how it is doing, and the Cluster
 * lifecycle (init founds, join, admit a peer, leave, list the Machines with their membership), all through the
 * {@link ClusterLifecycle}.
 *
 * @module
 */

import type { Engine } from "../deploy/machine/mod.ts";
import { type MachineRecord, type ObserveStatus, PROTOCOL_MAJOR, type RpcHandlers } from "../rpc/mod.ts";
import type { ClusterLifecycle } from "./cluster_lifecycle.ts";
import { type LocalMachine, recordLabels } from "./machine_file.ts";
import { messageOf } from "../util/mod.ts";

/** What the machine handlers need from the running daemon. */
export interface MachineHost {
  /** The Cluster lifecycle, which holds the record. */
  readonly lifecycle: ClusterLifecycle;
  /** This Machine's Docker, for the status. */
  readonly engine: Engine;
  /** The Docker bridge network this Machine's containers join, told to operators in its status. */
  readonly network: string;
  /** The daemon's release. */
  readonly daemonVersion: string;
  /** The endpoints this Machine advertises on the mesh. */
  readonly endpoints: readonly string[];
  /** Every route this daemon serves, as capabilities. */
  capabilities(): string[];
  /** The Observe Store's state, for the status. */
  observe(): Promise<ObserveStatus>;
}

/** The handlers of the machine routes. */
export type MachineHandlers = Pick<
  RpcHandlers,
  | "describeContract"
  | "status"
  | "init"
  | "listMachines"
  | "joinMachine"
  | "admitPeer"
  | "leaveMachine"
  | "configureMachine"
  | "retireMachine"
>;

/** The record as the wire shows it: everything but local bookkeeping; never key material. */
export function machineToWire(record: LocalMachine): MachineRecord {
  const out: MachineRecord = { id: record.id, name: record.name, phase: record.phase };
  if (record.cluster_id !== undefined) out["cluster_id"] = record.cluster_id;
  if (record.cluster_name !== undefined) out["cluster_name"] = record.cluster_name;
  if (record.subnet !== undefined) out.subnet = record.subnet;
  if (record.public_key !== undefined) out["public_key"] = record.public_key;
  if (typeof record.signing_key === "string") out["signing_key"] = record.signing_key;
  // Every Machine accepts ingress unless its record says otherwise.
  if (typeof record.accepts_ingress === "boolean") out["accepts_ingress"] = record.accepts_ingress;
  if (typeof record.accepts_workloads === "boolean") out["accepts_workloads"] = record.accepts_workloads;
  const labels = recordLabels(record);
  if (Object.keys(labels).length > 0) out.labels = labels;
  // Every Machine accepts Builds unless its record says otherwise.
  if (typeof record.accepts_builds === "boolean") out["accepts_builds"] = record.accepts_builds;
  return out;
}

/** The machine route handlers. */
export function machineHandlers(host: MachineHost): MachineHandlers {
  const { lifecycle, engine } = host;
  return {
    describeContract() {
      const record = lifecycle.record;
      return Promise.resolve({
        "machine_id": record.id,
        "machine_name": record.name,
        "protocol_major": PROTOCOL_MAJOR,
        "daemon_version": host.daemonVersion,
        capabilities: host.capabilities(),
      });
    },
    async status(_req, ctx) {
      const record = lifecycle.record;
      const readDocker = async (): Promise<
        { reachable: boolean; "server_version"?: string; error?: string }
      > => {
        try {
          const version = await engine.serverVersion(
            AbortSignal.any([ctx.signal, AbortSignal.timeout(10_000)]),
          );
          return { reachable: true, ...(version === undefined ? {} : { "server_version": version }) };
        } catch (error) {
          return { reachable: false, error: messageOf(error) };
        }
      };
      const [docker, observe] = await Promise.all([readDocker(), host.observe()]);
      const machine = { ...machineToWire(record), "docker_network": host.network };
      return { machine, docker, "observed_at": new Date().toISOString(), observe };
    },
    async init(req) {
      const record = await lifecycle.found({
        clusterName: req.cluster_name,
        machineName: req.machine_name,
        subnet: req.subnet,
      });
      return { machine: machineToWire(record) };
    },
    listMachines: () => lifecycle.membership(),
    async joinMachine(req) {
      const joined = await lifecycle.join(req);
      return { machine: machineToWire(joined), endpoints: [...host.endpoints] };
    },
    async admitPeer(req) {
      const result = await lifecycle.admit({
        machineId: req.machine_id,
        publicKey: req.public_key,
        subnet: req.subnet,
        endpoints: req.endpoints ?? [],
      }, req.signing_key);
      return { "machine_id": lifecycle.record.id, ...result };
    },
    leaveMachine: (req) => lifecycle.leave(req),
    retireMachine: (req) => lifecycle.retire(req),
    async configureMachine(req) {
      return { machine: machineToWire(await lifecycle.configure(req)) };
    },
  };
}
