/**
 * The names, addresses and paths of a lab, derived from its name, its size and its directory. Pure, so `down` after a
 * crash finds the same things `up` made.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import { chooseSubnet, DEFAULT_CLUSTER_NETWORK, type SubnetClaim } from "../mesh/mod.ts";
import { LabError } from "./errors.ts";

/** The lab name when none is given. */
export const DEFAULT_LAB_NAME = "ployz-lab";

/** The most Machines one lab holds (underlay addresses 192.0.2.11 to 192.0.2.30). */
export const MAX_MACHINES = 20;

/** The impairment profiles (ployz v0.2.1's lab profiles). */
export const PROFILES = ["clean", "regional", "far", "flap"] as const;

/** An impairment profile name. */
export type Profile = typeof PROFILES[number];

/** What a profile does to each direction of Machine-to-Machine traffic. */
export interface Impairment {
  /** One-way delay added by the relay, ms. */
  latencyMs: number;
  /** Uniform jitter, ± ms. */
  jitterMs: number;
  /** Probability that an arriving underlay datagram is dropped (iptables statistic). */
  loss: number;
}

/** The profiles' impairments (`clean` has none and no relay): ployz v0.2.1's netem profiles. */
export const IMPAIRMENTS: Readonly<Record<Profile, Impairment | undefined>> = Object.freeze({
  clean: undefined,
  regional: { latencyMs: 50, jitterMs: 5, loss: 0 },
  far: { latencyMs: 150, jitterMs: 20, loss: 0 },
  flap: { latencyMs: 120, jitterMs: 40, loss: 0.05 },
});

/** The relay's address on the lab bridge (in the underlay namespace). */
export const RELAY_ADDRESS = "192.0.2.1";

/** One lab Machine's names, addresses and paths. */
export interface MachinePlan {
  /** `m1`, `m2`, … */
  name: string;
  /** 1-based. */
  index: number;
  /** Its network namespace. */
  namespace: string;
  /** Its WireGuard interface (host-wide unique: wireguard-go's UAPI socket path is shared). */
  wgInterface: string;
  /** Its underlay address on the lab bridge (192.0.2.0/24, a documentation range). */
  underlayAddress: string;
  /** Its Machine Subnet as the lab's own enrollment allocates it, in order; its record says what it holds. */
  subnet: string;
  /** Its Machine Gateway (the Docker bridge's address). */
  gateway: string;
  /** Its directory: dockerd data, exec root, socket, pidfile, log; the WireGuard key. */
  dir: string;
  /** Its dockerd socket. */
  dockerSocket: string;
  /** Its dockerd pidfile. */
  dockerPidfile: string;
  /** Its WireGuard private key file (mode 0600); ployzd keeps its own under `ployzDataDir`. */
  keyPath: string;
  /** ployzd's data directory (`PLOYZ_DATA_DIR`). */
  ployzDataDir?: string;
  /** ployzd's runtime directory (`PLOYZ_RUN_DIR`), holding `ployz.sock`. */
  ployzRunDir?: string;
  /** ployzd's log. */
  ployzLog?: string;
}

/** A whole lab's plan. */
export interface LabPlan {
  /** The lab name (prefix of its namespaces). */
  name: string;
  /** The lab directory. */
  dir: string;
  /** The underlay namespace holding the lab bridge. */
  underlayNamespace: string;
  /** The lab bridge inside the underlay namespace. */
  bridge: string;
  /** The Cluster network. */
  network: string;
  /** The Machines. */
  machines: MachinePlan[];
  /** The lab operator's config directory (`PLOYZ_CONFIG_DIR`): its Config Store holds the allocation history. */
  operatorDir?: string;
}

const LAB_NAME = /^[a-z][a-z0-9-]{0,11}$/;

/** Checks a lab name: a lowercase letter, then up to 11 lowercase letters, digits or "-". */
export function checkLabName(name: string): void {
  if (!LAB_NAME.test(name)) {
    throw new LabError(
      "invalid_argument",
      `Cannot use lab name "${name}": a lowercase letter, then up to 11 lowercase letters, digits or "-"`,
    );
  }
}

/** The WireGuard interface name of Machine `index`: `plz<i>` in the default lab, `plz<hash><i>` in others. */
export function wgInterfaceName(labName: string, index: number): string {
  if (labName === DEFAULT_LAB_NAME) return `plz${index}`;
  return `plz${createHash("sha256").update(labName).digest("hex").slice(0, 6)}${index}`;
}

/** Plans a lab of `machines` Machines named `name` in `dir`, on Cluster network `network` (default the default). */
export function planLab(options: { name: string; machines: number; dir: string; network?: string }): LabPlan {
  const { name, machines, dir } = options;
  const network = options.network ?? DEFAULT_CLUSTER_NETWORK;
  checkLabName(name);
  if (!Number.isInteger(machines) || machines < 1 || machines > MAX_MACHINES) {
    throw new LabError(
      "invalid_argument",
      `Cannot make a lab of "${machines}" Machines: expected 1 to ${MAX_MACHINES}`,
    );
  }
  // The lab is its own operator: it allocates with its own history, as `machine add` would.
  const history: SubnetClaim[] = [];
  const plans: MachinePlan[] = [];
  for (let i = 1; i <= machines; i++) {
    const { subnet, gateway } = choose(network, history);
    history.push({ subnet });
    const mdir = join(dir, `m${i}`);
    plans.push({
      name: `m${i}`,
      index: i,
      namespace: `${name}-${i}`,
      wgInterface: wgInterfaceName(name, i),
      underlayAddress: `192.0.2.${10 + i}`,
      subnet,
      gateway,
      dir: mdir,
      dockerSocket: join(mdir, "docker.sock"),
      dockerPidfile: join(mdir, "docker.pid"),
      keyPath: join(mdir, "wg.key"),
      ployzDataDir: join(mdir, "ployz"),
      ployzRunDir: join(mdir, "run"),
      ployzLog: join(mdir, "ployzd.log"),
    });
  }
  return {
    name,
    dir,
    underlayNamespace: `${name}-u`,
    bridge: "br0",
    network,
    machines: plans,
    operatorDir: join(dir, "operator"),
  };
}

// The next /24 of `network`; a network that holds none is the operator's mistake, named.
function choose(network: string, history: SubnetClaim[]): { subnet: string; gateway: string } {
  try {
    return chooseSubnet({ network, observed: [], history });
  } catch (error) {
    throw new LabError(
      "invalid_argument",
      `Cannot plan the lab on network "${network}": ${(error as Error).message}`,
    );
  }
}

/** Finds a Machine of the plan by name (`m1`), refusing unknown names. */
export function machineByName(plan: LabPlan, name: string): MachinePlan {
  const machine = plan.machines.find((m) => m.name === name);
  if (machine === undefined) {
    const known = plan.machines.map((m) => m.name).join(", ");
    throw new LabError("not_found", `Cannot find lab Machine "${name}": the lab has ${known}`);
  }
  return machine;
}
