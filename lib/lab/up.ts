/**
 * `labUp`: N Machines on one host. Per Machine: a network namespace `<name>-<i>` linked by a veth pair to a bridge in
 * the lab's underlay namespace `<name>-u` (underlay addresses in 192.0.2.0/24), IP forwarding on, its own dockerd,
 * the test images loaded from the host's Docker, and its own `ployzd serve`. Then the lab acts as an operator: it
 * founds the Cluster on m1 (`ployz.machine.init.v1`) and adds the next Machines through the real enrollment flow
 * (`enrollMachine`, with the lab's own Config Store as allocation history). The lab never configures WireGuard:
 * each ployzd brings up its interface and peers from the replicated `machines` rows.
 *
 * Under a latency profile every Machine-to-Machine WireGuard datagram goes through the relay: a DNAT rule in each
 * Machine's namespace sends what it addresses to a peer's underlay endpoint to the relay port of that pair, so the
 * endpoints ployzd advertises stay the real ones.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  chooseSubnet,
  configHistory,
  enrollMachine,
  type EnrollResult,
  netnsPath,
  netnsRunner,
  runChecked,
} from "../mesh/mod.ts";
import { openConfigStore } from "../store/mod.ts";
import {
  DOCKER_NETWORKING,
  type DockerdConfig,
  dockerdConfigProblem,
  type DockerNetworking,
  loadImages,
  saveImages,
  startDockerd,
  waitDockerd,
} from "./dockerd.ts";
import { labDown } from "./down.ts";
import { LabError } from "./errors.ts";
import { pollUntil, traceMark } from "../util/mod.ts";
import { sh, spawnDetached, tryRun } from "./host.ts";
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
import { daemonClient, daemonLayout, startDaemonProcess, waitDaemon } from "./ployzd.ts";
import { attachLoopPool, btrfsPoolRoot, hostExec } from "../volume/mod.ts";

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
  /** The Cluster network the lab's Machine subnets are allocated in; default `10.210.0.0/16`. */
  network?: string;
  /** How many Machines join the Cluster (m1 founds it); the rest run ployzd uninitialized. Default all. */
  join?: number;
  /** Extra environment for every ployzd (membership thresholds, timing). */
  daemonEnv?: Record<string, string>;
  /** Docker's networking in every dockerd; default `default` (iptables management and masquerade on). */
  dockerNetworking?: DockerNetworking;
  /** What each dockerd's `daemon.json` adds: insecure registries, download attempts. */
  dockerdConfig?: DockerdConfig;
  /** Whether each namespace has IP forwarding on before dockerd starts; default true. With false, Docker turns it
   * on itself and sets FORWARD's policy to DROP, as on a fresh host. */
  forwardingBeforeDocker?: boolean;
  /**
   * Gives every Machine a btrfs Pool on a loop file of this many bytes, mounted at `<data>/pool` on the host before
   * its ployzd starts (the daemon's private mount namespace is a copy of the host's, so the mount must be there
   * first), then bound with `ployz machine pool --set btrfs`.
   */
  poolBytes?: number;
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
  const dockerNetworking = options.dockerNetworking ?? "default";
  if (!DOCKER_NETWORKING.includes(dockerNetworking)) {
    throw new LabError(
      "invalid_argument",
      `Cannot use Docker networking "${dockerNetworking}": expected one of ${DOCKER_NETWORKING.join(", ")}`,
    );
  }
  const dockerdConfig = options.dockerdConfig ?? {};
  const configProblem = dockerdConfigProblem(dockerdConfig);
  if (configProblem !== undefined) {
    throw new LabError("invalid_argument", `Cannot configure the lab's dockerd: ${configProblem}`);
  }
  const forwarding = options.forwardingBeforeDocker ?? true;
  const plan = planLab({
    name: options.name ?? "ployz-lab",
    machines: options.machines ?? 3,
    dir: options.dir,
    network: options.network,
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
    daemonEnv: options.daemonEnv ?? {},
    dockerNetworking,
    dockerdConfig,
    forwardingBeforeDocker: forwarding,
  };
  await writeState(plan.dir, state); // before anything exists, so down can undo a crash
  traceMark("lab: plan checked");
  try {
    progress(`underlay namespace "${plan.underlayNamespace}"`);
    await makeUnderlay(plan);
    // Each Machine's namespace, veth and firewall chains are its own: made side by side.
    await Promise.all(plan.machines.map((m) => makeNamespace(plan, m, profile, forwarding)));
    traceMark("lab: namespaces made");
    if (IMPAIRMENTS[profile] !== undefined) {
      progress(`latency relay for profile "${profile}"`);
      await startLabRelay(plan, profile);
      for (const m of plan.machines) await steerThroughRelay(plan, m);
    }
    progress(`starting ${plan.machines.length} dockerd`);
    await Promise.all(plan.machines.map((m) => startDockerd(m, dockerNetworking, dockerdConfig)));
    traceMark("lab: dockerd started");
    const wanted = options.images ?? ["ployz-test/busybox:1"];
    const hostSocket = options.hostDockerSocket ?? Deno.env.get("PLOYZ_DOCKER_SOCKET") ??
      "/var/run/docker.sock";
    const tar = join(plan.dir, "images.tar");
    // Saved from the host's Docker while the Machines' dockerd start; each Machine loads as soon as its own answers.
    const saving = wanted.length > 0 ? saveImages(hostSocket, wanted, tar) : Promise.resolve([]);
    saving.then(() => traceMark("lab: images saved"), () => {});
    await Promise.all(plan.machines.map(async (m) => {
      await waitDockerd(m, 90_000);
      traceMark(`lab: dockerd of ${m.name} answers`);
      if ((await saving).length === 0) return;
      await loadImages(m, tar);
      traceMark(`lab: images loaded on ${m.name}`);
    })).finally(() => saving.catch(() => {}));
    const images = await saving;
    progress(
      `dockerd answers on every Machine${images.length > 0 ? `, with ${images.join(", ")} loaded` : ""}`,
    );
    if (images.length > 0) await Deno.remove(tar);
    if (options.poolBytes !== undefined) {
      state.poolBytes = options.poolBytes;
      await writeState(plan.dir, state);
      progress(`btrfs Pools of ${options.poolBytes} bytes on loop files`);
      for (const m of plan.machines) {
        const dataDir = daemonLayout(m).dataDir;
        await attachLoopPool(hostExec(), {
          file: join(dataDir, "pool.img"),
          sizeBytes: options.poolBytes,
          mountPoint: btrfsPoolRoot(dataDir),
        });
      }
    }
    progress(`starting ${plan.machines.length} ployzd`);
    for (const m of plan.machines) await startDaemonProcess(m, options.daemonEnv);
    traceMark("lab: ployzd started");
    await Promise.all(
      plan.machines.map((m) =>
        waitDaemon(m, 60_000).then(() => traceMark(`lab: ployzd of ${m.name} answers`))
      ),
    );
    const keys = await Promise.all(plan.machines.map(async (m) => {
      using client = daemonClient(m);
      return (await client.status()).machine.public_key;
    }));
    plan.machines.forEach((m, i) => {
      if (keys[i] !== undefined) state.publicKeys[m.name] = keys[i];
    });
    await writeState(plan.dir, state);
    traceMark("lab: keys read");
    await enrollLab(plan, options.join ?? plan.machines.length, progress);
    if (options.poolBytes !== undefined) {
      for (const m of plan.machines) {
        using client = daemonClient(m);
        await client.machinePool({ set: { kind: "btrfs" } });
      }
    }
    state.phase = "up";
    await writeState(plan.dir, state);
    traceMark("lab: up");
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
  const ready = await pollUntil(async () => {
    const log = await Deno.readTextFile(logPath).catch(() => "");
    return log.includes("relay ready");
  }, { timeoutMs: 30_000 });
  if (!ready) {
    throw new LabError("unavailable", `Cannot start the lab's latency relay within 30 s: see "${logPath}"`);
  }
}

// WireGuard datagrams this Machine sends to a peer's real endpoint go to the relay port of the pair instead; replies
// from that port are translated back by conntrack, so both ployzd see each other's advertised endpoints.
async function steerThroughRelay(plan: LabPlan, m: MachinePlan): Promise<void> {
  const r = netnsRunner(m.namespace);
  for (const o of plan.machines) {
    if (o === m) continue;
    await runChecked(r, "iptables", [
      "-t",
      "nat",
      "-A",
      "OUTPUT",
      "-p",
      "udp",
      "-d",
      o.underlayAddress,
      "--dport",
      "51820",
      "-j",
      "DNAT",
      "--to-destination",
      `${RELAY_ADDRESS}:${relayPort(m.index, o.index)}`,
    ]);
  }
}

/**
 * Makes network namespace `namespace` with `lo` up and one interface, `ul0` at `address`/24, on the lab bridge (its
 * bridge end named `veth`): how each Machine, and anything a test puts beside them, reaches the underlay.
 */
export async function attachToUnderlay(
  plan: Pick<LabPlan, "underlayNamespace" | "bridge">,
  namespace: string,
  veth: string,
  address: string,
): Promise<void> {
  await sh("ip", ["netns", "add", namespace]);
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
    namespace,
  ]);
  const u = netnsRunner(plan.underlayNamespace);
  await runChecked(u, "ip", ["link", "set", veth, "master", plan.bridge, "up"]);
  const r = netnsRunner(namespace);
  await runChecked(r, "ip", ["link", "set", "lo", "up"]);
  await runChecked(r, "ip", ["addr", "add", `${address}/24`, "dev", "ul0"]);
  await runChecked(r, "ip", ["link", "set", "ul0", "up"]);
}

async function makeNamespace(
  plan: LabPlan,
  m: MachinePlan,
  profile: Profile,
  forwarding: boolean,
): Promise<void> {
  await attachToUnderlay(plan, m.namespace, `v${m.name}`, m.underlayAddress);
  const r = netnsRunner(m.namespace);
  // Off is set, not left: a new namespace may start with forwarding on.
  await runChecked(r, "sysctl", ["-q", "-w", `net.ipv4.ip_forward=${forwarding ? 1 : 0}`]);
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

/**
 * The lab as operator: founds the Cluster on m1 with a subnet from its own allocation history, then adds m2…m<join>
 * through m1 with the real enrollment flow, each admitted once the one before took its join.
 */
async function enrollLab(plan: LabPlan, members: number, progress: (line: string) => void): Promise<void> {
  if (members < 1) return;
  const operatorDir = plan.operatorDir ?? join(plan.dir, "operator");
  await Deno.mkdir(operatorDir, { recursive: true, mode: 0o700 });
  const config = openConfigStore(join(operatorDir, "config.db"));
  try {
    const history = configHistory(config);
    const [first, ...rest] = plan.machines;
    using entry = daemonClient(first);
    const before = (await entry.status()).machine;
    if (before.phase === "uninitialized") {
      const { subnet } = chooseSubnet({ network: plan.network, observed: [], history: history.list() });
      history.save({ subnet, machineId: before.id, machineName: first.name, state: "saved" });
      await entry.init({ "cluster_name": plan.name, "machine_name": first.name, subnet });
      traceMark(`lab: ${first.name} founded the Cluster`);
      progress(`${first.name} founded Cluster "${plan.name}" with subnet ${subnet}`);
    }
    // The next Machine is admitted once the previous one took its join: admissions and subnet picks stay one after
    // the other, as an operator's `machine add` runs, while the waits for each to catch up overlap.
    const enrollments: { m: MachinePlan; result: Promise<EnrollResult> }[] = [];
    try {
      for (const m of rest.slice(0, members - 1)) {
        const joiner = daemonClient(m);
        const joined = Promise.withResolvers<void>();
        const result = enrollMachine({
          entry,
          joiner,
          history,
          machineName: m.name,
          timeoutMs: 60_000,
          joined: joined.resolve,
        }).finally(() => joiner[Symbol.dispose]());
        result.then(() => traceMark(`lab: ${m.name} joined`), () => {});
        enrollments.push({ m, result });
        await Promise.race([joined.promise, result]);
      }
    } finally {
      // Nothing runs on after a failure: the entry client and the Config Store close below.
      await Promise.allSettled(enrollments.map((e) => e.result));
    }
    for (const { m, result: pending } of enrollments) {
      const result = await pending;
      if (!result.participating) {
        throw new LabError(
          "unavailable",
          `Cannot add lab Machine "${m.name}": still ${result.machine.phase} after 60 s (see "${m.ployzLog}")`,
        );
      }
      progress(
        `${m.name} joined with subnet ${result.subnet}, participating after ${
          ((result.participatingAfterMs ?? 0) / 1000).toFixed(1)
        } s`,
      );
    }
  } finally {
    config.close();
  }
}
