/**
 * The mesh firewall: Machine-to-Machine HTTP (store sync, port 51000) is accepted only when it arrives on the
 * WireGuard interface, so only Machines holding a key the interface knows, from their own allowed addresses, reach
 * it. Everything else aimed at that port (the underlay, containers on the Docker bridge, other hosts) is dropped.
 * The rules live in their own iptables chain, `PLOYZ-INPUT` by default, jumped to from INPUT; rebuilding it is
 * idempotent.
 *
 * @module
 */

import { type CommandRunner, runChecked } from "./runner.ts";

/** The chain holding the mesh rules. */
export const MESH_CHAIN = "PLOYZ-INPUT";

/** Options of {@link ensureMeshFirewall}. */
export interface FirewallOptions {
  /** The WireGuard interface. */
  interfaceName: string;
  /** TCP ports served only over the mesh; default [51000]. */
  ports?: number[];
  /** The chain name; default `PLOYZ-INPUT`. */
  chain?: string;
}

/** Makes the chain hold exactly the mesh rules and makes INPUT jump to it first. */
export async function ensureMeshFirewall(runner: CommandRunner, options: FirewallOptions): Promise<void> {
  const chain = options.chain ?? MESH_CHAIN;
  if ((await runner.run("iptables", ["-w", "-n", "-L", chain])).code !== 0) {
    await runChecked(runner, "iptables", ["-w", "-N", chain]);
  }
  await runChecked(runner, "iptables", ["-w", "-F", chain]);
  for (const port of options.ports ?? [51000]) {
    const tcp = ["-w", "-A", chain, "-p", "tcp", "--dport", String(port)];
    await runChecked(runner, "iptables", [...tcp, "-i", options.interfaceName, "-j", "ACCEPT"]);
    await runChecked(runner, "iptables", [...tcp, "-j", "DROP"]);
  }
  if ((await runner.run("iptables", ["-w", "-C", "INPUT", "-j", chain])).code !== 0) {
    await runChecked(runner, "iptables", ["-w", "-I", "INPUT", "1", "-j", chain]);
  }
}

/** Removes the jump and the chain; absent rules are fine. */
export async function removeMeshFirewall(runner: CommandRunner, chain: string = MESH_CHAIN): Promise<void> {
  while ((await runner.run("iptables", ["-w", "-D", "INPUT", "-j", chain])).code === 0);
  await runner.run("iptables", ["-w", "-F", chain]);
  await runner.run("iptables", ["-w", "-X", chain]);
}
