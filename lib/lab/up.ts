/**
 * `labUp`: N Machines on one host. Per Machine: a network namespace `<name>-<i>` linked by a veth pair to a bridge in
 * the lab's underlay namespace `<name>-u` (underlay addresses in 192.0.2.0/24), IP forwarding on, its own dockerd
 * (bridge on its Machine Subnet), a WireGuard interface with its own key, every other lab Machine as a peer, routes
 * to their subnets, and the test images loaded from the host's Docker.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ensureInterface,
  ensurePrivateKeyFile,
  managementAddress,
  type MeshPeer,
  netnsPath,
  netnsRunner,
  peerAllowedIps,
  runChecked,
  setPeers,
  syncRoutes,
} from "../mesh/mod.ts";
import { loadImages, saveImages, startDockerd, waitDockerd } from "./dockerd.ts";
import { labDown } from "./down.ts";
import { LabError } from "./errors.ts";
import { pollUntil, sh, spawnDetached, tryRun } from "./host.ts";
import {
  IMPAIRMENTS,
  type LabPlan,
  type MachinePlan,
  planLab,
  type Profile,
  PROFILES,
  RELAY_ADDRESS,
} from "./plan.ts";
import { type RelayConfig, relayPort } from "./relay.ts";
import { checkPrerequisites } from "./prereq.ts";
import { type LabState, readState, writeState } from "./state.ts";

/** The iptables chain each Machine's INPUT and OUTPUT jump to; partitions live there. */
export const LAB_CHAIN = "PLOYZ-LAB";

/** The iptables chain each Machine's INPUT jumps to; a profile's loss lives there. */
export const LOSS_CHAIN = "PLOYZ-LAB-LOSS";

/** Options of {@link labUp}. */
export interface LabUpOptions {
  /** How many Machines; default 3. */
  machines?: number;
  /** The lab directory; must not hold a lab already. */
  dir: string;
  /** The lab name (namespace prefix); default `ployz-lab`. */
  name?: string;
  /** Impairment profile; default `clean`. */
  profile?: Profile;
  /** Images to copy from the host's Docker; default `ployz-test/busybox:1`. */
  images?: string[];
  /** The host's Docker socket to copy images from; default `PLOYZ_DOCKER_SOCKET` or `/var/run/docker.sock`. */
  hostDockerSocket?: string;
  /** Progress lines. */
  progress?: (line: string) => void;
}

/** What {@link labUp} made. */
export interface LabUpResult {
  /** The saved state. */
  state: LabState;
  /** Images loaded into every Machine. */
  images: string[];
  /** Images asked for but absent from the host's Docker. */
  missingImages: string[];
  /** How long it took, in milliseconds. */
  elapsedMs: number;
}

/** Creates a lab. On failure it removes what it made and rethrows. */
export async function labUp(options: LabUpOptions): Promise<LabUpResult> {
  const started = Date.now();
  const progress = options.progress ?? (() => {});
  const profile = options.profile ?? "clean";
  if (!PROFILES.includes(profile)) {
    throw new LabError(
      "invalid_argument",
      `Cannot use profile "${profile}": expected one of ${PROFILES.join(", ")}`,
    );
  }
  const plan = planLab({
    name: options.name ?? "ployz-lab",
    machines: options.machines ?? 3,
    dir: options.dir,
  });
  checkPrerequisites();
  if (await readState(plan.dir) !== undefined) {
    throw new LabError(
      "conflict",
      `Cannot make a lab in "${plan.dir}": a lab is already there (run "ployz lab down")`,
    );
  }
  await refuseTakenNames(plan);
  await Deno.mkdir(plan.dir, { recursive: true });
  const state: LabState = {
    version: 1,
    phase: "creating",
    createdAt: new Date().toISOString(),
    profile,
    plan,
    publicKeys: {},
    partitions: [],
  };
  await writeState(plan.dir, state); // before anything exists, so down can undo a crash
  try {
    progress(`underlay namespace "${plan.underlayNamespace}"`);
    await makeUnderlay(plan);
    for (const m of plan.machines) await makeNamespace(plan, m, profile);
    if (IMPAIRMENTS[profile] !== undefined) {
      progress(`latency relay for profile "${profile}"`);
      await startLabRelay(plan, profile);
    }
    progress(`starting ${plan.machines.length} dockerd`);
    await Promise.all(plan.machines.map(startDockerd));
    for (const m of plan.machines) {
      const { publicKey } = await ensurePrivateKeyFile(m.keyPath);
      state.publicKeys[m.name] = publicKey;
      await ensureInterface(netnsRunner(m.namespace), {
        name: m.wgInterface,
        privateKeyPath: m.keyPath,
        addresses: [`${managementAddress(publicKey)}/128`],
      });
    }
    await writeState(plan.dir, state);
    for (const m of plan.machines) {
      await setPeers(netnsRunner(m.namespace), m.wgInterface, peersOf(plan, state, m));
    }
    await Promise.all(plan.machines.map((m) => waitDockerd(m, 90_000)));
    progress("dockerd answers on every Machine");
    for (const m of plan.machines) {
      // After dockerd: the route's source is the gateway, which exists once the Docker bridge does.
      const others = plan.machines.filter((o) => o !== m);
      const destinations = others.flatMap((o) => [o.subnet, managementAddress(state.publicKeys[o.name])]);
      await syncRoutes(netnsRunner(m.namespace), m.wgInterface, destinations, { src: m.gateway });
    }
    const wanted = options.images ?? ["ployz-test/busybox:1"];
    const hostSocket = options.hostDockerSocket ?? Deno.env.get("PLOYZ_DOCKER_SOCKET") ??
      "/var/run/docker.sock";
    const tar = join(plan.dir, "images.tar");
    const images = wanted.length > 0 ? await saveImages(hostSocket, wanted, tar) : [];
    if (images.length > 0) {
      progress(`loading ${images.join(", ")}`);
      await Promise.all(plan.machines.map((m) => loadImages(m, tar)));
      await Deno.remove(tar);
    }
    state.phase = "up";
    await writeState(plan.dir, state);
    return {
      state,
      images,
      missingImages: wanted.filter((i) => !images.includes(i)),
      elapsedMs: Date.now() - started,
    };
  } catch (error) {
    await labDown({ dir: plan.dir }).catch(() => {});
    throw error;
  }
}

async function refuseTakenNames(plan: LabPlan): Promise<void> {
  const taken = (await sh("ip", ["netns", "list"])).split("\n").map((l) => l.split(" ")[0]);
  for (const ns of [plan.underlayNamespace, ...plan.machines.map((m) => m.namespace)]) {
    if (taken.includes(ns)) {
      throw new LabError(
        "conflict",
        `Cannot make lab "${plan.name}": network namespace "${ns}" already exists`,
      );
    }
  }
  for (const m of plan.machines) {
    if ((await tryRun("ip", ["link", "show", "dev", m.wgInterface])).code === 0) {
      throw new LabError(
        "conflict",
        `Cannot make lab "${plan.name}": interface "${m.wgInterface}" already exists`,
      );
    }
  }
}

async function makeUnderlay(plan: LabPlan): Promise<void> {
  const u = netnsRunner(plan.underlayNamespace);
  await sh("ip", ["netns", "add", plan.underlayNamespace]);
  await runChecked(u, "ip", ["link", "set", "lo", "up"]);
  await runChecked(u, "ip", ["link", "add", plan.bridge, "type", "bridge"]);
  await runChecked(u, "ip", ["addr", "add", `${RELAY_ADDRESS}/24`, "dev", plan.bridge]);
  await runChecked(u, "ip", ["link", "set", plan.bridge, "up"]);
}

async function startLabRelay(plan: LabPlan, profile: Profile): Promise<void> {
  const impairment = IMPAIRMENTS[profile]!;
  const config: RelayConfig = {
    bindAddress: RELAY_ADDRESS,
    latencyMs: impairment.latencyMs,
    jitterMs: impairment.jitterMs,
    endpoints: Object.fromEntries(
      plan.machines.map((m) => [m.name, { host: m.underlayAddress, port: 51820 }]),
    ),
    ports: Object.fromEntries(
      plan.machines.flatMap((a) =>
        plan.machines.filter((b) => b !== a).map((b) => [`${a.name}>${b.name}`, relayPort(a.index, b.index)])
      ),
    ),
  };
  const configPath = join(plan.dir, "relay.json");
  const logPath = join(plan.dir, "relay.log");
  await Deno.writeTextFile(configPath, JSON.stringify(config, null, 2) + "\n");
  const root = fileURLToPath(new URL("../../", import.meta.url));
  await spawnDetached([
    "nsenter",
    `--net=${netnsPath(plan.underlayNamespace)}`,
    "--",
    Deno.execPath(),
    "run",
    "--quiet",
    "--no-prompt",
    "--config",
    join(root, "deno.json"),
    "-P=lab",
    join(root, "cmd", "ployz.ts"),
    "lab",
    "relay",
    "--config",
    configPath,
  ], logPath);
  const ready = await pollUntil(30_000, async () => {
    const log = await Deno.readTextFile(logPath).catch(() => "");
    return log.includes("relay ready");
  });
  if (!ready) {
    throw new LabError("unavailable", `Cannot start the lab's latency relay within 30 s: see "${logPath}"`);
  }
}

async function makeNamespace(plan: LabPlan, m: MachinePlan, profile: Profile): Promise<void> {
  await sh("ip", ["netns", "add", m.namespace]);
  const veth = `v${m.name}`;
  await sh("ip", [
    "-n",
    plan.underlayNamespace,
    "link",
    "add",
    veth,
    "type",
    "veth",
    "peer",
    "name",
    "ul0",
    "netns",
    m.namespace,
  ]);
  const u = netnsRunner(plan.underlayNamespace);
  await runChecked(u, "ip", ["link", "set", veth, "master", plan.bridge, "up"]);
  const r = netnsRunner(m.namespace);
  await runChecked(r, "ip", ["link", "set", "lo", "up"]);
  await runChecked(r, "ip", ["addr", "add", `${m.underlayAddress}/24`, "dev", "ul0"]);
  await runChecked(r, "ip", ["link", "set", "ul0", "up"]);
  await runChecked(r, "sysctl", ["-q", "-w", "net.ipv4.ip_forward=1"]);
  await runChecked(r, "iptables", ["-N", LAB_CHAIN]);
  await runChecked(r, "iptables", ["-I", "INPUT", "-j", LAB_CHAIN]);
  await runChecked(r, "iptables", ["-I", "OUTPUT", "-j", LAB_CHAIN]);
  await runChecked(r, "iptables", ["-N", LOSS_CHAIN]);
  await runChecked(r, "iptables", ["-I", "INPUT", "-j", LOSS_CHAIN]);
  const loss = IMPAIRMENTS[profile]?.loss ?? 0;
  if (loss > 0) {
    await runChecked(r, "iptables", [
      "-A",
      LOSS_CHAIN,
      "-i",
      "ul0",
      "-p",
      "udp",
      "-m",
      "statistic",
      "--mode",
      "random",
      "--probability",
      String(loss),
      "-j",
      "DROP",
    ]);
  }
}

/** The mesh peers of Machine `m`: every other lab Machine. */
export function peersOf(plan: LabPlan, state: LabState, m: MachinePlan): MeshPeer[] {
  return plan.machines.filter((o) => o !== m).map((o) => ({
    publicKey: state.publicKeys[o.name],
    endpoints: [
      IMPAIRMENTS[state.profile] === undefined
        ? `${o.underlayAddress}:51820`
        : `${RELAY_ADDRESS}:${relayPort(m.index, o.index)}`,
    ],
    allowedIps: peerAllowedIps(o.subnet, state.publicKeys[o.name]),
  }));
}
