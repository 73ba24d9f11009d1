/**
 * `ployz lab`: a local multi-Machine lab on this host (root, Linux). See lib/lab.
 *
 * @module
 */

import { CliError, type Command, type CommandContext, UsageError } from "../../lib/cli/mod.ts";
import {
  DAEMON_ENV_PREFIXES,
  DOCKER_NETWORKING,
  type DockerdConfig,
  dockerdConfigProblem,
  type DockerNetworking,
  labDown,
  LabError,
  labExec,
  labHeal,
  labPartition,
  labRestart,
  labRestartDockerd,
  type LabStatus,
  labStatus,
  labUp,
  type Profile,
  PROFILES,
  type RelayConfig,
  startRelay,
} from "../../lib/lab/mod.ts";
import { MeshError, subnetCollisions } from "../../lib/mesh/mod.ts";
import { parseBytes } from "../../lib/deploy/mod.ts";
import { RpcError } from "../../lib/rpc/mod.ts";
import { sharedOptions } from "./flags.ts";

const DEFAULT_DIR = "/tmp/ployz-lab";

const dirOption = { dir: { type: "string" as const } };

function dirOf(ctx: CommandContext): string {
  return typeof ctx.values.dir === "string" ? ctx.values.dir : DEFAULT_DIR;
}

async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof LabError || error instanceof MeshError || error instanceof RpcError) {
      throw new CliError(error.code, error.message);
    }
    throw error;
  }
}

function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeKeys(v)]),
  );
}

function statusText(status: LabStatus): string {
  const lines = [`Lab "${status.name}" in ${status.dir}: ${status.phase}, profile ${status.profile}`];
  for (const [a, b] of status.partitions) lines.push(`partition: ${a.join(",")} / ${b.join(",")}`);
  for (const m of status.machines) {
    const ns = m.namespacePresent ? m.namespace : `${m.namespace} (missing)`;
    lines.push(
      `${m.name}  ${m.subnet}  netns ${ns}  dockerd ${
        m.dockerd ? "answers" : "does not answer"
      }  wg ${m.wgInterface}`,
    );
    const list = m.machineList;
    if (list !== undefined) {
      lines.push(`  machine ls by "${list.observer.machine_name}" at ${list.observed_at}:`);
      for (const o of list.machines) {
        const wg = m.peers.find((p) => p.machine === o.name || p.machine === o.public_key);
        lines.push(
          `    ${o.name}${o.self ? " *" : ""}  ${o.subnet ?? "-"}  ${
            o.phase ?? "-"
          }  ${o.membership}  handshake ${o.last_handshake_at ?? "never"}  store traffic ${
            o.last_store_traffic_at ?? "never"
          }${wg?.endpoint ? `  via ${wg.endpoint}` : ""}`,
        );
      }
      for (const c of subnetCollisions(list.machines)) {
        lines.push(`    subnet collision on ${c.subnet}: ${c.machines.map((x) => x.name).join(", ")}`);
      }
      if (list.mesh_error !== undefined) lines.push(`    mesh: ${list.mesh_error}`);
    } else if (m.machineListError !== undefined) {
      lines.push(`  ployzd does not answer: ${m.machineListError}`);
    }
  }
  return lines.join("\n") + "\n";
}

const up: Command = {
  name: "up",
  summary: "Create N lab Machines (namespaces, dockerd, ployzd) joined into one Cluster",
  usage: "[--machines N] [--join N] [--profile clean|regional|far|flap] [--docker-networking default|off] " +
    "[--forwarding on|off] [--network CIDR] [--pool btrfs:SIZE] [--insecure-registry HOST:PORT]… [--max-download-attempts N] [--dir D] [--name NAME] [--image IMAGE]…",
  description:
    `Needs root on Linux. The lab lives in --dir (default ${DEFAULT_DIR}); its namespaces are named` +
    ` <NAME>-<i> (default ployz-lab). Images are copied from the Docker at PLOYZ_DOCKER_SOCKET.` +
    ` m1 founds the Cluster and m2…m<join> are added through "machine add" (--join, default all); the others run` +
    ` ployzd uninitialized. Each dockerd runs Docker's default networking (iptables and masquerade on);` +
    ` --docker-networking off starts it with --iptables=false --ip-masq=false. --forwarding off leaves IP` +
    ` forwarding off until dockerd turns it on (Docker then sets FORWARD's policy to DROP, as on a fresh host).` +
    ` --network CIDR founds the Cluster on another private network than 10.210.0.0/16 (e.g. 10.217.0.0/16).` +
    ` --pool btrfs:SIZE gives each Machine a btrfs Pool on a loop file of SIZE under its data directory.` +
    ` --insecure-registry HOST:PORT lets every dockerd pull from a plain-HTTP registry there (insecure-registries);` +
    ` --max-download-attempts N sets Docker's tries per layer (default 5, retried 5 s and more apart).` +
    ` PLOYZ_MEMBERSHIP_*, PLOYZ_MESH_TICK_MS, PLOYZ_SYNC_INTERVAL_MS,` +
    ` PLOYZ_RETIRE_AFTER_SECONDS, PLOYZ_INGRESS_RESCAN_SECONDS, PLOYZ_DNS_UPSTREAMS and PLOYZ_BUILD_UPLOAD_IDLE_MS` +
    ` pass to every ployzd.`,
  options: {
    ...dirOption,
    machines: { type: "string" },
    join: { type: "string" },
    profile: { type: "string" },
    name: { type: "string" },
    image: { type: "string", multiple: true },
    "docker-networking": { type: "string" },
    forwarding: { type: "string" },
    network: { type: "string" },
    pool: { type: "string" },
    "insecure-registry": { type: "string", multiple: true },
    "max-download-attempts": { type: "string" },
  },
  async run(ctx) {
    const machines = ctx.values.machines === undefined ? 3 : Number(ctx.values.machines);
    if (!Number.isInteger(machines)) throw new UsageError(`Option "--machines" must be a whole number`);
    const join = ctx.values.join === undefined ? undefined : Number(ctx.values.join);
    if (join !== undefined && (!Number.isInteger(join) || join < 0 || join > machines)) {
      throw new UsageError(`Option "--join" must be a whole number from 0 to --machines`);
    }
    const profile = (ctx.values.profile ?? "clean") as string;
    if (!(PROFILES as readonly string[]).includes(profile)) {
      throw new UsageError(`Option "--profile" must be one of ${PROFILES.join(", ")}: got "${profile}"`);
    }
    const networking = (ctx.values["docker-networking"] ?? "default") as string;
    if (!(DOCKER_NETWORKING as readonly string[]).includes(networking)) {
      throw new UsageError(
        `Option "--docker-networking" must be one of ${DOCKER_NETWORKING.join(", ")}: got "${networking}"`,
      );
    }
    const forwarding = (ctx.values.forwarding ?? "on") as string;
    if (forwarding !== "on" && forwarding !== "off") {
      throw new UsageError(`Option "--forwarding" must be on or off: got "${forwarding}"`);
    }
    let poolBytes: number | undefined;
    if (typeof ctx.values.pool === "string") {
      const size = /^btrfs:(.+)$/.exec(ctx.values.pool);
      const bytes = size === null ? undefined : parseBytes(size[1]);
      if (typeof bytes !== "number" || bytes < 128 * 2 ** 20) {
        throw new UsageError(
          `Option "--pool" must be btrfs:SIZE with SIZE 128m or more (a loop file per Machine): got "${ctx.values.pool}"`,
        );
      }
      poolBytes = bytes;
    }
    const attempts = ctx.values["max-download-attempts"];
    const maxDownloadAttempts = attempts === undefined ? undefined : Number(attempts);
    const dockerdConfig: DockerdConfig = {
      ...(Array.isArray(ctx.values["insecure-registry"])
        ? { insecureRegistries: ctx.values["insecure-registry"].map(String) }
        : {}),
      ...(maxDownloadAttempts === undefined ? {} : { maxDownloadAttempts }),
    };
    const problem = dockerdConfigProblem(dockerdConfig);
    if (problem !== undefined) {
      const option = problem.startsWith("insecure") ? "--insecure-registry" : "--max-download-attempts";
      throw new UsageError(`Option "${option}": ${problem}`);
    }
    const result = await guard(() =>
      labUp({
        poolBytes,
        dockerdConfig,
        dockerNetworking: networking as DockerNetworking,
        forwardingBeforeDocker: forwarding === "on",
        machines,
        network: typeof ctx.values.network === "string" ? ctx.values.network : undefined,
        dir: dirOf(ctx),
        name: typeof ctx.values.name === "string" ? ctx.values.name : undefined,
        profile: profile as Profile,
        images: Array.isArray(ctx.values.image) ? ctx.values.image.map(String) : undefined,
        progress: (line) => ctx.io.err(`lab: ${line}\n`),
        join,
        daemonEnv: daemonEnvFromOwn(),
      })
    );
    for (const image of result.missingImages) {
      ctx.io.err(`warning: image "${image}" is not in the host's Docker; it was not loaded\n`);
    }
    const { plan } = result.state;
    ctx.io.out(`Lab "${plan.name}" is up in ${(result.elapsedMs / 1000).toFixed(1)} s:\n`);
    for (const m of plan.machines) {
      ctx.io.out(
        `  ${m.name}  netns ${m.namespace}  subnet ${m.subnet}  DOCKER_HOST=unix://${m.dockerSocket}  PLOYZ_RUN_DIR=${m.ployzRunDir}\n`,
      );
    }
    return 0;
  },
};

const status: Command = {
  name: "status",
  summary: "Show each lab Machine and its peers as it observes them",
  usage: "[--dir D] [--json]",
  options: { ...dirOption, ...sharedOptions("json") },
  async run(ctx) {
    const result = await guard(() => labStatus({ dir: dirOf(ctx) }));
    ctx.io.out(ctx.values.json ? JSON.stringify(snakeKeys(result), null, 2) + "\n" : statusText(result));
    return 0;
  },
};

const partition: Command = {
  name: "partition",
  summary: "Cut the underlay between two groups of Machines",
  usage: "A,B / C [--dir D]",
  description: "Example: ployz lab partition m1,m2 / m3",
  options: dirOption,
  positionals: [1, 3],
  async run(ctx) {
    const sides = ctx.positionals.join(" ").split("/").map((s) => s.trim());
    if (sides.length !== 2 || sides.some((s) => s === "")) {
      throw new UsageError(`Cannot read partition "${ctx.positionals.join(" ")}": expected "A,B / C"`);
    }
    const [groupA, groupB] = sides.map((s) => s.split(",").map((n) => n.trim()).filter((n) => n !== ""));
    await guard(() => labPartition({ dir: dirOf(ctx), groupA, groupB }));
    ctx.io.out(`Partitioned ${groupA.join(",")} / ${groupB.join(",")}\n`);
    return 0;
  },
};

const heal: Command = {
  name: "heal",
  summary: "Remove every partition",
  usage: "[--dir D]",
  options: dirOption,
  async run(ctx) {
    await guard(() => labHeal({ dir: dirOf(ctx) }));
    ctx.io.out("Healed: no partitions\n");
    return 0;
  },
};

const exec: Command = {
  name: "exec",
  summary: "Run a command inside a lab Machine (DOCKER_HOST points at its dockerd)",
  usage: "MACHINE [--dir D] -- CMD…",
  options: dirOption,
  positionals: [2, Number.MAX_SAFE_INTEGER],
  async run(ctx) {
    const [machine, ...argv] = ctx.positionals;
    const result = await guard(() => labExec({ dir: dirOf(ctx), machine, argv, inherit: true }));
    return result.code;
  },
};

const down: Command = {
  name: "down",
  summary: "Remove everything the lab made (safe after a crash, safe twice)",
  usage: "[--dir D]",
  options: dirOption,
  async run(ctx) {
    const result = await guard(() => labDown({ dir: dirOf(ctx) }));
    if (!result.found) {
      ctx.io.out(`No lab in ${dirOf(ctx)}\n`);
      return 0;
    }
    ctx.io.out(
      `Lab removed: ${result.namespaces.length} namespaces, ${result.processes} processes stopped, directory ${
        result.dirRemoved ? "removed" : "kept"
      }\n`,
    );
    return 0;
  },
};

function daemonEnvFromOwn(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(Deno.env.toObject())) {
    if (DAEMON_ENV_PREFIXES.some((p) => key.startsWith(p))) out[key] = value;
  }
  return out;
}

const restart: Command = {
  name: "restart",
  summary: "Restart one lab Machine's ployzd (its mesh, dockerd and containers keep running), or its dockerd",
  usage: "MACHINE [--dockerd] [--dir D]",
  description:
    "--dockerd restarts the Machine's dockerd instead, as `systemctl restart docker` would; ployzd keeps" +
    " running.",
  options: { ...dirOption, dockerd: { type: "boolean" } },
  positionals: [1, 1],
  async run(ctx) {
    const [machine] = ctx.positionals;
    if (ctx.values.dockerd === true) {
      const restarted = await guard(() => labRestartDockerd({ dir: dirOf(ctx), machine }));
      ctx.io.out(`Restarted dockerd of ${machine} in ${(restarted.elapsedMs / 1000).toFixed(1)} s\n`);
      return 0;
    }
    const result = await guard(() => labRestart({ dir: dirOf(ctx), machine, daemonEnv: daemonEnvFromOwn() }));
    ctx.io.out(`Restarted ployzd of ${machine} in ${(result.elapsedMs / 1000).toFixed(1)} s\n`);
    return 0;
  },
};

const relay: Command = {
  name: "relay",
  summary: 'Run the lab\'s latency relay (started by "lab up" under a latency profile)',
  usage: "--config FILE",
  options: { config: { type: "string" } },
  async run(ctx) {
    if (typeof ctx.values.config !== "string") throw new UsageError(`Option "--config" is required`);
    const config = JSON.parse(await Deno.readTextFile(ctx.values.config)) as RelayConfig;
    const running = await guard(() => startRelay(config));
    ctx.io.err("relay ready\n");
    // Runs until lab down stops it; SIGTERM closes the sockets first.
    await new Promise<void>((resolve) => Deno.addSignalListener("SIGTERM", () => resolve()));
    await running.close();
    return 0;
  },
};

/** `ployz lab`: the local multi-Machine lab. */
export const labCommand: Command = {
  name: "lab",
  summary: "Run a local multi-Machine lab on this host (root)",
  subcommands: [up, status, partition, heal, exec, restart, down, relay],
};
