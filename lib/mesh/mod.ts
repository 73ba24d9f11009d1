/**
 * The WireGuard mesh between Machines: keys, addressing, optimistic subnet allocation, interface and peer control
 * through `ip` and `wg` (kernel WireGuard or `wireguard-go`), endpoint selection, and each Machine's own membership
 * observation of its peers, the mesh firewall, and the operator's side of enrollment (`enrollMachine`). Nothing here
 * runs on its own schedule and nothing decides for another Machine.
 *
 * @module
 */

export { MeshError } from "./errors.ts";
export { networkContains, parseIpv4, parseIpv4Network } from "./cidr.ts";
export type { Ipv4Network } from "./cidr.ts";
export { ensurePrivateKeyFile } from "./keys.ts";
export {
  clusterNetworkOf,
  DEFAULT_CLUSTER_NETWORK,
  managementAddress,
  parseMachineSubnet,
  peerAllowedIps,
} from "./addressing.ts";
export type { MachineSubnet } from "./addressing.ts";
export { chooseSubnet } from "./allocation.ts";
export {
  type PeerCandidate,
  type PeerRowVerdict,
  type QuarantinedPeer,
  quarantinedPeers,
  type UsablePeer,
  usablePeers,
} from "./peer_rows.ts";
export type { ChooseSubnetInput, SubnetChoice, SubnetClaim } from "./allocation.ts";
export { DEFAULT_MEMBERSHIP_THRESHOLDS, observeMembership } from "./membership.ts";
export type { MembershipEvidence, MembershipState, MembershipThresholds } from "./membership.ts";
export type { EndpointSelection, EndpointState } from "./endpoint.ts";
export { EndpointDriver } from "./endpoint_driver.ts";
export type { EndpointChange } from "./endpoint_driver.ts";
export { hostRunner, netnsPath, netnsRunner, runChecked } from "./runner.ts";
export type { CommandResult, CommandRunner, RunOptions } from "./runner.ts";
export {
  ensureInterface,
  readHandshakes,
  readPeers,
  removeInterface,
  setPeerEndpoint,
  setPeers,
  syncRoutes,
} from "./wireguard.ts";
export type {
  InterfaceOptions,
  InterfaceResult,
  MeshPeer,
  PeerReport,
  RouteOptions,
  SetPeersOptions,
  WireGuardBackend,
} from "./wireguard.ts";
export {
  ensureContainerForwarding,
  ensureMeshFirewall,
  FORWARD_CHAIN,
  MESH_CHAIN,
  NAT_CHAIN,
  readFirewall,
  removeMeshFirewall,
} from "./firewall.ts";
export type { ContainerForwardingOptions, FirewallOptions, FirewallSnapshot } from "./firewall.ts";
export { firewallStandIn } from "./firewall_stand_in.ts";
export type { FirewallStandIn } from "./firewall_stand_in.ts";
export { defaultEndpoints, parseEndpoints } from "./advertise.ts";
export type { InterfaceAddress } from "./advertise.ts";
export { subnetCollisions } from "./collisions.ts";
export type { SubnetCollision, SubnetHolder } from "./collisions.ts";
export { configHistory, enrollMachine } from "./enroll.ts";
export type { AllocationHistory, AllocationTable, EnrollOptions, EnrollResult } from "./enroll.ts";
