/**
 * The local multi-Machine lab (`ployz lab`): on one Linux host, as root, N Machines, each a network namespace with
 * its own dockerd and its own `ployzd serve`, over a private underlay bridge. The lab founds the Cluster on m1 and
 * adds the others through the real enrollment flow; each ployzd brings up its own WireGuard mesh. Partitions, loss
 * and latency act on the underlay; a teardown removes everything from the lab's state file.
 *
 * Each dockerd runs Docker's default networking (iptables management and IP masquerade on), as a Machine runs
 * Docker as installed; `dockerNetworking: "off"` (`--docker-networking off`) is there for a test that asks for
 * Docker out of the firewall. Where the lab still departs from a real install, and why that is safe:
 *
 * - **Namespaces, not hosts.** A Machine is a network namespace sharing the host's kernel, mounts and process
 *   table. Networking (interfaces, routes, iptables, conntrack, sysctls such as `ip_forward`) is per namespace, which
 *   is everything ployzd configures; processes are found by namespace and command line, never by name.
 * - **IP forwarding on before dockerd** (the default; `--forwarding off` leaves it off so Docker turns it on itself
 *   and sets FORWARD's policy to DROP, as on a fresh host). Both states are tested.
 * - **dockerd flags**: its own `--config-file` (empty unless `--insecure-registry` or `--max-download-attempts`
 *   add to it, so the host's `/etc/docker/daemon.json` never applies), data root, exec root, socket and pidfile (several engines on one host); `--storage-driver vfs` (works
 *   wherever the lab directory lies, overlayfs included; ployz sees only Docker's API, never its storage driver);
 *   `--mtu 1420` (containers' MTU fits WireGuard's, so no test depends on path-MTU discovery; an installed Docker
 *   keeps 1500 and relies on the host, the router between bridge and WireGuard, sending "fragmentation needed");
 *   `--shutdown-timeout 2` and `--log-level warn` (speed and quiet only).
 * - **wireguard-go, not the kernel module** (this kernel has none): ployz drives both through the same `ip`/`wg`
 *   commands; only creating the interface differs.
 * - **No systemd**: ployzd runs as a detached process under the relocated `serve` permission set, and spawns
 *   `ployzd dns` as its child instead of a unit; the installer's units are tested in a systemd container instead.
 * - **Relocated paths and fixed endpoints**: each ployzd has its own data and run directories, a distinct WireGuard
 *   interface name (wireguard-go's UAPI socket path is host-wide) and advertises its underlay address only.
 * - **Images** are copied from the host's Docker with `docker save | docker load` (no registry needed).
 * - **Lab chains**: `PLOYZ-LAB` (INPUT, OUTPUT) and `PLOYZ-LAB-LOSS` (INPUT) are empty unless a partition or a
 *   loss profile is on; under a latency profile, a nat OUTPUT DNAT steers WireGuard's UDP through the relay. They act
 *   on underlay traffic only, never on the mesh or the containers.
 * - **Underlay addresses** are in 192.0.2.0/24 (a documentation range) with no route beyond it: "outside the
 *   mesh" is the underlay namespace, not the internet.
 *
 * @module
 */

export { LabError } from "./errors.ts";
export { PROFILES, wgInterfaceName } from "./plan.ts";
export type { LabPlan, MachinePlan, Profile } from "./plan.ts";
export { startRelay } from "./relay.ts";
export type { Relay, RelayConfig } from "./relay.ts";
export { missingCommands } from "./prereq.ts";
export type { LabState } from "./state.ts";
export { attachToUnderlay, labUp } from "./up.ts";
export type { LabUpOptions, LabUpResult } from "./up.ts";
export { labDown } from "./down.ts";
export type { LabDownResult } from "./down.ts";
export {
  labExec,
  labHeal,
  labPartition,
  labRestart,
  labRestartDockerd,
  labStartMachine,
  labStatus,
  labStopMachine,
} from "./ops.ts";
export { DOCKER_NETWORKING, dockerdConfigProblem } from "./dockerd.ts";
export type { DockerdConfig, DockerNetworking } from "./dockerd.ts";
export { DAEMON_ENV_PREFIXES, daemonClient } from "./ployzd.ts";
export type { LabMachineStatus, LabPeerStatus, LabStatus } from "./ops.ts";
