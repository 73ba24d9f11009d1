/**
 * The local multi-Machine lab (`ployz lab`): on one Linux host, as root, N Machines, each a network namespace with
 * its own dockerd and WireGuard interface, joined over a private underlay bridge; partitions and healing on that
 * underlay; and a teardown that removes everything from the lab's state file. No ployzd runs in it yet.
 *
 * @module
 */

export { LabError } from "./errors.ts";
export type { LabErrorCode } from "./errors.ts";
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
export { labExec, labHeal, labPartition, labStatus } from "./ops.ts";
export type { LabMachineStatus, LabPeerStatus, LabStatus } from "./ops.ts";
