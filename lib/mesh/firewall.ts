/**
 * The mesh firewall, in its own chains so nothing else on the host is touched. Every part is checked first and
 * rebuilt only when it differs, so the Cluster link can re-check it on every tick: a firewall reload that flushed it
 * is undone within one tick, and a tick that finds it intact changes nothing. A tick reads each table it checks
 * once ({@link readFirewall}: three `iptables -S`), so an intact firewall costs three reads and no write.
 *
 * - **INPUT** (`PLOYZ-INPUT`, IPv4 and IPv6, jumped to first from INPUT): Machine-to-Machine HTTP (store sync and
 *   Machine RPC, port 51000) is accepted only when it arrives on the WireGuard interface, so only Machines holding a
 *   key the interface knows, from their own allowed addresses, reach it. Everything else aimed at that port (the
 *   underlay, containers on the Docker bridge, other hosts) is dropped. The daemon serves that port only while this
 *   part is in place. A quarantined peer (a Machine retired while gone, allowed only its Machine Gateway) reaches
 *   that port, where every request of it is refused with the signed row that retired it, and nothing else: every
 *   other packet from it is dropped here, and FORWARD drops whatever it would send to or get from a container.
 * - **FORWARD** (`PLOYZ-FORWARD`, jumped to from `DOCKER-USER` when Docker manages iptables, from FORWARD
 *   otherwise): admits traffic between the Cluster network and this Machine Subnet across the WireGuard interface,
 *   both ways, and nothing wider. Docker sets FORWARD's policy to DROP on a host where it had to turn IP forwarding
 *   on itself, and lets into a bridge only what a container publishes; a connection from another Machine's container
 *   to a port nobody publishes is Ployz's normal case (Internal DNS names, Caddy upstreams).
 * - **nat POSTROUTING** (`PLOYZ-POSTROUTING`, kept first in POSTROUTING): the Machine's `ployz` network is created
 *   with Docker's masquerade off (`com.docker.network.bridge.enable_ip_masquerade=false`), and this chain masquerades
 *   the Machine Subnet only towards destinations outside the Cluster network. Containers keep their own source
 *   addresses across the mesh (a peer's WireGuard admits only its peers' Machine Subnets as sources, so a packet
 *   rewritten to the host's address is dropped) and still reach the internet through the host. Mesh-bound traffic
 *   RETURNs first, so a network made before masquerade was turned off (Docker's own
 *   `-s <subnet> ! -o <bridge> -j MASQUERADE` below ours) works while this chain stays ahead; the daemon still
 *   reports such a network, because that order does not hold through a dockerd restart.
 *
 * Why masquerade off plus our own rule, rather than only a RETURN ahead of Docker's MASQUERADE: measured on Docker
 * 20.10, a dockerd restart that follows a firewall reload re-inserts Docker's MASQUERADE at the top of POSTROUTING,
 * ahead of the RETURN, and every connection a container opens before the next tick stays rewritten for its whole life
 * (conntrack keeps the mapping). With masquerade off for the network Docker never installs that rule, so nothing can
 * get ahead of ours; and after a reload that flushed every table, this chain puts the containers' internet access
 * back within a tick, where Docker's own rule would stay gone until dockerd restarts.
 *
 * @module
 */

import { type CommandRunner, runChecked } from "./runner.ts";

/** The chain holding the mesh INPUT rules (IPv4 and IPv6). */
export const MESH_CHAIN = "PLOYZ-INPUT";

/** The filter chain admitting mesh traffic to and from the Machine's containers. */
export const FORWARD_CHAIN = "PLOYZ-FORWARD";

/** The nat chain masquerading the Machine's containers towards destinations outside the Cluster network. */
export const NAT_CHAIN = "PLOYZ-POSTROUTING";

/** Docker's chain for users' FORWARD rules, evaluated before Docker's own. */
const DOCKER_USER = "DOCKER-USER";

/** Options of {@link ensureMeshFirewall}. */
export interface FirewallOptions {
  /** The WireGuard interface. */
  interfaceName: string;
  /** TCP ports served only over the mesh; default [51000]. */
  ports?: number[];
  /** The INPUT chain name; default `PLOYZ-INPUT`. */
  chain?: string;
  /**
   * Addresses (IPv4 `/32`) of quarantined peers (Machines retired while gone): from them only the ports above are
   * accepted, and every other packet is dropped.
   */
  quarantined?: readonly string[];
}

/** Options of {@link ensureContainerForwarding}. */
export interface ContainerForwardingOptions {
  /** The WireGuard interface. */
  interfaceName: string;
  /** This Machine's Machine Subnet (its `ployz` network), e.g. `10.210.1.0/24`. */
  subnet: string;
  /** The Cluster network every Machine Subnet lies in, e.g. `10.210.0.0/16`. */
  clusterNetwork: string;
  /** Addresses (IPv4 `/32`) of quarantined peers: nothing is forwarded from or to them. */
  quarantined?: readonly string[];
}

type Tool = "iptables" | "ip6tables";

/**
 * The tables the mesh firewall uses, each read whole with one `iptables -S`: chain name → its `-A` lines. A table
 * that could not be read is absent, and its chains are then read one by one as before.
 */
export type FirewallSnapshot = ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;

/** The tables {@link readFirewall} reads: everything {@link ensureMeshFirewall} and the forwarding check look at. */
const SNAPSHOT_TABLES = [["iptables", "filter"], ["iptables", "nat"], ["ip6tables", "filter"]] as const;

function tableKey(tool: Tool, table: string): string {
  return `${tool} ${table}`;
}

/** Splits one `iptables -S` listing of a whole table into its chains (built-in `-P`, user `-N`) and their rules. */
export function parseTableListing(text: string): Map<string, string[]> {
  const chains = new Map<string, string[]>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const [verb, chain] = line.split(" ", 2);
    if (chain === undefined) continue;
    if (verb === "-P" || verb === "-N") {
      if (!chains.has(chain)) chains.set(chain, []);
    } else if (verb === "-A") {
      const rules = chains.get(chain) ?? [];
      rules.push(line);
      chains.set(chain, rules);
    }
  }
  return chains;
}

/**
 * Reads the filter and nat tables (IPv4) and the filter table (IPv6), one command each, so a check that finds
 * everything in place costs three reads and no writes (the per-chain reads it replaces were nine). A table that
 * cannot be read is left out; its chains are then checked one by one, with the errors that path reports.
 */
export async function readFirewall(runner: CommandRunner): Promise<FirewallSnapshot> {
  const snapshot = new Map<string, Map<string, string[]>>();
  for (const [tool, table] of SNAPSHOT_TABLES) {
    try {
      const result = await runner.run(tool, ["-w", "-t", table, "-S"]);
      if (result.code === 0) snapshot.set(tableKey(tool, table), parseTableListing(result.stdout));
    } catch {
      // the tool is missing: the per-chain path reports it
    }
  }
  return snapshot;
}

/** The rules of `chain` as `iptables -S` prints them; `undefined` when the chain does not exist. */
async function listRules(
  runner: CommandRunner,
  tool: Tool,
  table: string,
  chain: string,
  snapshot?: FirewallSnapshot,
): Promise<readonly string[] | undefined> {
  const listed = snapshot?.get(tableKey(tool, table));
  if (listed !== undefined) return listed.get(chain);
  const result = await runner.run(tool, ["-w", "-t", table, "-S", chain]);
  if (result.code !== 0) return undefined;
  return result.stdout.split("\n").map((line) => line.trim()).filter((line) => line.startsWith("-A "));
}

/**
 * Makes `chain` hold exactly `rules` (each written in the order `iptables -S` prints it, so an intact chain compares
 * equal); returns whether it had to change anything.
 */
async function ensureChain(
  runner: CommandRunner,
  tool: Tool,
  table: string,
  chain: string,
  rules: string[][],
  snapshot: FirewallSnapshot | undefined,
): Promise<boolean> {
  const want = rules.map((rule) => ["-A", chain, ...rule].join(" "));
  const have = await listRules(runner, tool, table, chain, snapshot);
  if (have !== undefined && have.length === want.length && have.every((line, i) => line === want[i])) {
    return false;
  }
  if (have === undefined) await runChecked(runner, tool, ["-w", "-t", table, "-N", chain]);
  else await runChecked(runner, tool, ["-w", "-t", table, "-F", chain]);
  for (const rule of rules) await runChecked(runner, tool, ["-w", "-t", table, "-A", chain, ...rule]);
  return true;
}

/**
 * Makes `from` jump to `chain`; with `first`, the jump must be `from`'s first rule (moved there when it is not).
 * Returns whether it had to change anything.
 */
async function ensureJump(
  runner: CommandRunner,
  tool: Tool,
  table: string,
  from: string,
  chain: string,
  first: boolean,
  snapshot: FirewallSnapshot | undefined,
): Promise<boolean> {
  const jump = ["-j", chain];
  const line = `-A ${from} -j ${chain}`;
  if (first) {
    const rules = await listRules(runner, tool, table, from, snapshot);
    if (rules?.[0] === line) return false;
    while ((await runner.run(tool, ["-w", "-t", table, "-D", from, ...jump])).code === 0);
  } else if (snapshot?.has(tableKey(tool, table))) {
    // `-C from -j chain` holds exactly when the listing has this line.
    if ((await listRules(runner, tool, table, from, snapshot))?.includes(line)) return false;
  } else if ((await runner.run(tool, ["-w", "-t", table, "-C", from, ...jump])).code === 0) {
    return false;
  }
  await runChecked(runner, tool, ["-w", "-t", table, "-I", from, "1", ...jump]);
  return true;
}

/**
 * Makes the INPUT chains (IPv4 and IPv6) hold exactly the mesh rules and INPUT jump to them. Returns what it had to
 * put back (empty when everything was in place); throws when it cannot, and then the mesh port must not be served.
 */
export async function ensureMeshFirewall(
  runner: CommandRunner,
  options: FirewallOptions,
  snapshot?: FirewallSnapshot,
): Promise<string[]> {
  const chain = options.chain ?? MESH_CHAIN;
  const wg = options.interfaceName;
  const ports = options.ports ?? [51000];
  const rules: string[][] = [];
  for (const port of ports) {
    const tcp = ["-p", "tcp", "-m", "tcp", "--dport", String(port)];
    rules.push(["-i", wg, ...tcp, "-j", "ACCEPT"], [...tcp, "-j", "DROP"]);
  }
  // A quarantined peer reaches the mesh port, where it is told it was removed, and nothing else on this host.
  const quarantine: string[][] = [];
  for (const address of options.quarantined ?? []) {
    for (const port of ports) {
      quarantine.push([
        "-s",
        address,
        "-i",
        wg,
        "-p",
        "tcp",
        "-m",
        "tcp",
        "--dport",
        String(port),
        "-j",
        "ACCEPT",
      ]);
    }
    quarantine.push(["-s", address, "-i", wg, "-j", "DROP"]);
  }
  const repaired: string[] = [];
  for (const [tool, family] of [["iptables", "IPv4"], ["ip6tables", "IPv6"]] as const) {
    const all = tool === "iptables" ? [...quarantine, ...rules] : rules;
    if (await ensureChain(runner, tool, "filter", chain, all, snapshot)) {
      repaired.push(`${chain} (${family})`);
    }
    if (await ensureJump(runner, tool, "filter", "INPUT", chain, false, snapshot)) {
      repaired.push(`INPUT jump (${family})`);
    }
  }
  return repaired;
}

/**
 * Makes the Machine's containers reach other Machines' containers with their own addresses, and everything outside
 * the Cluster network through the host's masquerade (see the module comment). Returns what it had to put back.
 */
export async function ensureContainerForwarding(
  runner: CommandRunner,
  options: ContainerForwardingOptions,
  snapshot?: FirewallSnapshot,
): Promise<string[]> {
  const { interfaceName: wg, subnet, clusterNetwork: cluster } = options;
  const repaired: string[] = [];
  const forward = [
    ...(options.quarantined ?? []).flatMap((q) => [["-s", q, "-j", "DROP"], ["-d", q, "-j", "DROP"]]),
    ["-s", cluster, "-d", subnet, "-i", wg, "-j", "ACCEPT"],
    ["-s", subnet, "-d", cluster, "-o", wg, "-j", "ACCEPT"],
  ];
  if (await ensureChain(runner, "iptables", "filter", FORWARD_CHAIN, forward, snapshot)) {
    repaired.push(FORWARD_CHAIN);
  }
  // DOCKER-USER when Docker manages iptables (its own FORWARD rules come first otherwise); FORWARD without Docker's.
  const from = (await listRules(runner, "iptables", "filter", DOCKER_USER, snapshot)) === undefined
    ? "FORWARD"
    : DOCKER_USER;
  if (await ensureJump(runner, "iptables", "filter", from, FORWARD_CHAIN, false, snapshot)) {
    repaired.push(`${from} jump`);
  }
  const nat = [
    ["-s", subnet, "-d", cluster, "-j", "RETURN"],
    ["-s", subnet, "!", "-d", cluster, "-j", "MASQUERADE"],
  ];
  if (await ensureChain(runner, "iptables", "nat", NAT_CHAIN, nat, snapshot)) repaired.push(NAT_CHAIN);
  if (await ensureJump(runner, "iptables", "nat", "POSTROUTING", NAT_CHAIN, true, snapshot)) {
    repaired.push("POSTROUTING jump");
  }
  return repaired;
}

async function removeChain(
  runner: CommandRunner,
  tool: Tool,
  table: string,
  from: string[],
  chain: string,
): Promise<void> {
  for (const f of from) {
    while ((await runner.run(tool, ["-w", "-t", table, "-D", f, "-j", chain])).code === 0);
  }
  await runner.run(tool, ["-w", "-t", table, "-F", chain]);
  await runner.run(tool, ["-w", "-t", table, "-X", chain]);
}

/** Removes every jump and chain above (leaving the Cluster); absent rules are fine. */
export async function removeMeshFirewall(runner: CommandRunner, chain: string = MESH_CHAIN): Promise<void> {
  for (const tool of ["iptables", "ip6tables"] as const) {
    await removeChain(runner, tool, "filter", ["INPUT"], chain);
  }
  await removeChain(runner, "iptables", "filter", [DOCKER_USER, "FORWARD"], FORWARD_CHAIN);
  await removeChain(runner, "iptables", "nat", ["POSTROUTING"], NAT_CHAIN);
}
