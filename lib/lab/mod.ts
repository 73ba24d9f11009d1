/**
 * The local multi-Machine lab (`ployz lab`): on one Linux host, as root, N Machines, each a network namespace with
 * its own dockerd and its own `ployzd serve`, over a private underlay bridge. The lab founds the Cluster on m1 and
 * adds the others through the real enrollment flow; each ployzd brings up its own WireGuard mesh. Partitions, loss
 * and latency act on the underlay; a teardown removes everything from the lab's state file.
 *
 * @module
 */

export { LabError } from "./errors.ts";
export {
  DEFAULT_LAB_NAME,
  IMPAIRMENTS,
  MAX_MACHINES,
  planLab,
  PROFILES,
  RELAY_ADDRESS,
  wgInterfaceName,
} from "./plan.ts";
export type { Impairment, LabPlan, MachinePlan, Profile } from "./plan.ts";
export { relayPort, startRelay } from "./relay.ts";
export type { Relay, RelayConfig } from "./relay.ts";
export { checkPrerequisites, LAB_COMMANDS, missingCommands } from "./prereq.ts";
export type { LabState } from "./state.ts";
export { LAB_CHAIN, labUp, LOSS_CHAIN } from "./up.ts";
export type { LabUpOptions, LabUpResult } from "./up.ts";
export { labDown } from "./down.ts";
export type { LabDownResult } from "./down.ts";
export {
  labExec,
  labHeal,
  labPartition,
  labRestart,
  labStartMachine,
  labStatus,
  labStopMachine,
} from "./ops.ts";
export { DAEMON_ENV_PREFIXES, daemonClient, daemonSocket } from "./ployzd.ts";
export type { LabMachineStatus, LabPeerStatus, LabStatus } from "./ops.ts";
export { DIGEST_TABLES, readRows, storeDigest, storeFile } from "./store_reader.ts";
