/**
 * Keeping the Cluster link's firewall in place (lib/mesh's rules): port 51000 reachable only over the WireGuard
 * interface, quarantined Machines held to it, and the rules that let containers reach each other across the mesh
 * under Docker's default networking. Checked on every tick, so a firewall reload is undone within one tick.
 *
 * @module
 */

import {
  clusterNetworkOf,
  type CommandRunner,
  ensureContainerForwarding,
  ensureMeshFirewall,
  readFirewall,
} from "../mesh/mod.ts";
import type { LinkHealth } from "./cluster_link_health.ts";
import { SYNC_PORT } from "./mesh_settings.ts";

/** What the rules are for. */
export interface LinkFirewall {
  interfaceName: string;
  /** This Machine's subnet. */
  subnet: string;
  /** The Cluster network the settings name. */
  clusterNetwork: string;
  /** The addresses of quarantined (retired) Machines. */
  quarantined: string[];
}

/** How a check reports: the link's health, and the listener it guards. */
export interface FirewallReport {
  health: LinkHealth;
  log: (line: string) => void;
  /** Whether the listener is open; a rule put back under an open listener is logged. */
  listening(): boolean;
  /** The mesh port is not guarded: the listener must close now. */
  unguarded(): void;
}

/** Checks (and puts back) the rules; false when the mesh port is not guarded. */
export async function ensureLinkFirewall(
  runner: CommandRunner,
  rules: LinkFirewall,
  report: FirewallReport,
): Promise<boolean> {
  const { health, log } = report;
  let guarded = false;
  // Each table read once for both checks below; only a part found out of place costs more commands.
  const snapshot = await readFirewall(runner);
  try {
    const repaired = await ensureMeshFirewall(runner, {
      interfaceName: rules.interfaceName,
      ports: [SYNC_PORT],
      quarantined: rules.quarantined,
    }, snapshot);
    if (repaired.length > 0 && report.listening()) log(`mesh: firewall: put back ${repaired.join(", ")}`);
    guarded = true;
    health.ok("firewall");
  } catch (error) {
    health.fail("firewall", error);
    report.unguarded();
  }
  try {
    const repaired = await ensureContainerForwarding(runner, {
      interfaceName: rules.interfaceName,
      subnet: rules.subnet,
      // A Cluster founded on another network (`machine init --subnet`) forwards and exempts from masquerade its
      // own network, not the default one.
      clusterNetwork: clusterNetworkOf(rules.subnet, rules.clusterNetwork),
      quarantined: rules.quarantined,
    }, snapshot);
    if (repaired.length > 0 && report.listening()) {
      log(`mesh: container forwarding: put back ${repaired.join(", ")}`);
    }
    health.ok("container forwarding");
  } catch (error) {
    health.fail("container forwarding", error);
  }
  return guarded;
}
