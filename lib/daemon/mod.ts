/**
 * The Machine daemon (`ployzd serve`): the local Machine record and key pair, Machine RPC handlers over this
 * Machine's Docker, and the publisher of its containers into the replicated store.
 *
 * Why its own area: the daemon composes the store, the Docker adapter of lib/deploy, the Machine RPC of lib/rpc and
 * the mesh of lib/mesh; none of those areas should own that composition or the Machine's identity.
 *
 * Mesh. Once in a Cluster the daemon brings up its WireGuard interface, sets its peers from the replicated
 * `machines` rows as they change, routes their subnets through it, advertises its endpoints in its own row, serves
 * store sync on its Machine Gateway port 51000 (accepted only from the WireGuard interface) and replicates with
 * peers at their gateways. Joining (`ployz.machine.join.v1`) starts from the Entry Machine's row and counts as
 * participating only once caught up; leaving (`ployz.machine.leave.v1`) tombstones its own row.
 *
 * Files. `<dataDir>/machine.json` holds the record (id minted here once as 26 lowercase base32 characters, name,
 * phase, Cluster, subnet, public key), replaced atomically. `<dataDir>/keys/wg.key` (0600) holds the X25519
 * private key, never logged or sent. `<dataDir>/store.db` is the replicated store, opened once the Machine
 * participates, with site id = Machine id.
 *
 * Authority (docs/bets.md, bet 6). The daemon writes only its own rows (its `machines` row and its containers), acts
 * only on containers its labels say it owns, and admits each create against its own Docker (image present,
 * network present, name not held by a container Ployz does not own).
 *
 * @module
 */

export { type Daemon, type DaemonOptions, type DaemonPaths, startDaemon } from "./daemon.ts";
export { type LocalMachine } from "./machine_file.ts";
/**
 * Where no systemd runs, the daemon keeps `ployzd dns` as a child it respawns with a bounded backoff; exported
 * for the end-to-end test that kills real children.
 */
export {
  type SupervisedDnsOptions,
  type SupervisedDnsRunner,
  supervisedDnsRunner,
} from "./serving_runtime.ts";
export { type MeshSettings, meshSettingsFromEnv } from "./mesh_settings.ts";
export { materializeFiles, pruneFiles } from "./shipped_files.ts";
export { type ObserveRunner, systemdObserveRunner } from "./observe_runtime.ts";
export { type BuildHandlers, buildHandlers, type BuildHost } from "./build_handlers.ts";
export { execHandlers, type ExecHost } from "./exec_handlers.ts";
