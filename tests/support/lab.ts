// A lab fixture for the lab tests: Machines brought up through the real `ployz lab`, always taken down.
import assert from "node:assert/strict";
import { join } from "node:path";
import { IMAGE } from "./docker.ts";
import { DOCKER_SOCKET } from "./needs.ts";
import { eventually, sleep } from "./poll.ts";
import { ROOT, run, type RunResult } from "./spawn.ts";

/** The real `ployz` CLI (bin/ployz) run with `env`. */
export interface Cli {
  /** Runs `ployz args` with `env` plus `extra`. */
  ployz(args: string[], extra?: Record<string, string>): Promise<RunResult>;
  /** Like {@linkcode Cli.ployz}, failing the test on a non-zero exit. */
  ok(args: string[], extra?: Record<string, string>): Promise<RunResult>;
}

/** The `ployz` CLI of {@link Cli} with `env`. */
export function ployzCli(env: Record<string, string>): Cli {
  const ployz = (args: string[], extra: Record<string, string> = {}): Promise<RunResult> =>
    run(join(ROOT, "bin", "ployz"), args, { ...env, ...extra });
  const ok = async (args: string[], extra: Record<string, string> = {}): Promise<RunResult> => {
    const result = await ployz(args, extra);
    assert.equal(result.code, 0, `ployz ${args.join(" ")} failed: ${result.stderr}${result.stdout}`);
    return result;
  };
  return { ployz, ok };
}

/** `docker` against Machine `m`'s own dockerd in the lab at `dir`. */
export function labDocker(dir: string, m: string, args: string[]): Promise<RunResult> {
  return run("docker", ["-H", `unix://${join(dir, m, "docker.sock")}`, ...args]);
}

/** `ployz lab exec <m> <at…> -- <command…>`: `command` in Machine `m`'s namespace of the lab that `at` places. */
export function labExec(m: string, at: readonly string[], command: readonly string[]): string[] {
  return ["lab", "exec", m, ...at, "--", ...command];
}

/**
 * `docker run` arguments of a detached container `name` on a Machine's `ployz` network whose HTTP server on port 80
 * answers `hello-from-<hello>`, with `options` (labels, say) before its image.
 */
export function helloServer(name: string, hello = name, options: readonly string[] = []): string[] {
  const serve = `mkdir -p /www && echo hello-from-${hello} > /www/index.html && exec httpd -f -p 80 -h /www`;
  return ["run", "-d", "--name", name, "--network", "ployz", ...options, IMAGE, "sh", "-c", serve];
}

/**
 * `ployz lab exec <m> --dir <dir> -- docker run` of a throwaway container on Machine `m`'s `ployz` network that
 * fetches `url` and prints the body, then `rc=<wget's exit code>`. busybox wget's `-T` crashes in the test image,
 * so a shell timer bounds the fetch to 5 s.
 */
export function fetchInLab(dir: string, m: string, url: string): string[] {
  const script = `wget -q -O - ${url} & p=$!; (sleep 5; kill $p 2>/dev/null) & wait $p; echo rc=$?`;
  return labExec(m, ["--dir", dir], ["docker", ...onPloyzNetwork(script)]);
}

/** The address of container `name` on Machine `m`'s `ployz` network, as `ployz lab exec … docker inspect` reads it. */
export async function labAddress(cli: Cli, dir: string, m: string, name: string): Promise<string> {
  const inspect = ["docker", "inspect", "-f", "{{.NetworkSettings.Networks.ployz.IPAddress}}", name];
  return (await cli.ok(labExec(m, ["--dir", dir], inspect))).stdout.trim();
}

/** `docker` arguments that run `script` with `sh -c` in a throwaway container on a Machine's `ployz` network. */
export function onPloyzNetwork(script: string): string[] {
  return ["run", "--rm", "--network", "ployz", IMAGE, "sh", "-c", script];
}

/** Where one lab lives on the host, named with a random part so that test files can run side by side. */
export interface LabPlace {
  /** The random part. */
  tag: string;
  /** The lab's name (`<prefix><tag>`), which its namespaces and interfaces carry. */
  name: string;
  /** Its directory, `/tmp/plz-<prefix>-<tag>`. */
  dir: string;
  /** `--dir DIR` for `ployz lab …`. */
  at: string[];
  /** The environment `ployz` runs with against it: the Docker socket, an operator config of its own, a 2 s mesh tick. */
  env: Record<string, string>;
}

/** A fresh {@linkcode LabPlace} for a lab named after `prefix` (short: interface names are at most 15 bytes). */
export function labPlace(prefix: string): LabPlace {
  const tag = crypto.randomUUID().replaceAll("-", "").slice(0, 6);
  const dir = `/tmp/plz-${prefix}-${tag}`;
  return {
    tag,
    name: `${prefix}${tag}`,
    dir,
    at: ["--dir", dir],
    env: {
      PLOYZ_DOCKER_SOCKET: DOCKER_SOCKET,
      PLOYZ_CONFIG_DIR: join(dir, "operator"),
      PLOYZ_MESH_TICK_MS: "2000",
    },
  };
}

/** A lab brought up for one test, with the ways the test acts on it. */
export interface Lab extends AsyncDisposable {
  /** The lab's directory. */
  dir: string;
  /** The lab's name: its network namespaces are `<name>-<n>` and the underlay's `<name>-u`. */
  name: string;
  /** Runs the real `ployz` CLI with the lab's environment plus `extra`. */
  ployz(args: string[], extra?: Record<string, string>): Promise<RunResult>;
  /** Like {@linkcode Lab.ployz}, failing the test on a non-zero exit. */
  ok(args: string[], extra?: Record<string, string>): Promise<RunResult>;
  /** `ployz` attached to Machine `m`'s socket, as an operator on it would run it. */
  on(m: string, args: string[]): Promise<RunResult>;
  /** The environment `ployz` attached to Machine `m` runs with. */
  envOn(m: string): Record<string, string>;
  /** `docker` against Machine `m`'s own dockerd. */
  docker(m: string, args: string[]): Promise<RunResult>;
  /** `ployz lab …` on this lab. */
  lab(args: string[]): Promise<RunResult>;
  /**
   * Writes `compose` to `file` in the lab's directory and deploys it through Machine `m` (`-y`, then `args`; by
   * default the health gate's `--monitor 1s`), failing the test unless the Deploy succeeds.
   */
  deploy(m: string, file: string, compose: string, args?: string[]): Promise<RunResult>;
}

/**
 * Brings up `machines` Machines with `ployz lab up` (the first `join` of them in the Cluster, default all; `upArgs`
 * add to its command line); disposing takes the lab down and removes its directory.
 */
export async function startLab(
  prefix: string,
  machines: number,
  options: { join?: number; env?: Record<string, string>; upArgs?: string[] } = {},
): Promise<Lab> {
  const { name: labName, dir, at, env } = labPlace(prefix);
  const base = { ...env, ...options.env };
  const { ployz, ok } = ployzCli(base);
  const envOn = (m: string): Record<string, string> => ({ ...base, PLOYZ_RUN_DIR: join(dir, m, "run") });
  const lab: Lab = {
    dir,
    name: labName,
    ployz,
    ok,
    envOn,
    on: (m, args) => ployz(args, { PLOYZ_RUN_DIR: join(dir, m, "run") }),
    docker: (m, args) => labDocker(dir, m, args),
    lab: (args) => ployz(["lab", ...args, ...at]),
    async deploy(m, file, compose, args = ["--monitor", "1s"]): Promise<RunResult> {
      const path = join(dir, file);
      await Deno.writeTextFile(path, compose);
      const deployed = await lab.on(m, ["deploy", "-f", path, "-y", ...args]);
      assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
      return deployed;
    },
    async [Symbol.asyncDispose](): Promise<void> {
      const down = await ployz(["lab", "down", ...at]);
      if (down.code !== 0) console.error(`lab down failed: ${down.stderr}`);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
  try {
    const joining = options.join === undefined ? [] : ["--join", String(options.join)];
    const name = ["--name", labName];
    await ok([
      "lab",
      "up",
      "--machines",
      String(machines),
      ...joining,
      ...name,
      ...(options.upArgs ?? []),
      ...at,
    ]);
  } catch (error) {
    await lab[Symbol.asyncDispose]();
    throw error;
  }
  return lab;
}

/** A container of a Project on a lab Machine, by its id and its address on the Machine's `ployz` network. */
export interface ProjectReplica {
  machine: string;
  container: string;
  address: string;
}

/**
 * Each of `machines`' one container of `project`, with its address on the `ployz` network; throws (for a caller to
 * poll) while a Machine runs not exactly one, or its container has no address yet.
 */
export async function projectReplicas(
  lab: Lab,
  machines: string[],
  project: string,
): Promise<ProjectReplica[]> {
  return await Promise.all(machines.map(async (machine) => {
    const ids = (await lab.docker(machine, ["ps", "-q", "--filter", `label=ployz.project=${project}`])).stdout
      .trim();
    if (ids === "" || ids.includes("\n")) {
      throw new Error(`${machine} runs not exactly one ${project} container`);
    }
    const format = "{{.NetworkSettings.Networks.ployz.IPAddress}}";
    const address = (await lab.docker(machine, ["inspect", "-f", format, ids])).stdout.trim();
    if (address === "") throw new Error(`${machine}'s container has no address yet`);
    return { machine, container: ids, address };
  }));
}

/** Waits (up to 60 s) until Machine `m`'s `machine ls` lists `count` Machines, every one of them up. */
export async function machinesUp(lab: Lab, m: string, count: number): Promise<void> {
  await eventually(60_000, `${m} sees ${count} Machines up`, async () => {
    const listed = await lab.on(m, ["machine", "ls", "--json"]);
    const machines = JSON.parse(listed.stdout).machines as { membership: string }[];
    return machines.length === count && machines.every((x) => x.membership === "up") ? true : undefined;
  });
}

/** What one request loop through one Machine's Ingress Proxy saw. */
export interface LoadFigures {
  /** The Machine whose port 80 was asked. */
  machine: string;
  /** Requests answered 200. */
  served: number;
  /** Every other request: when it began and ended (`<ms>-<ms>`, epoch), curl's exit code, output and HTTP status. */
  failures: string[];
  /** The first word of each body served (a Service's version mark). */
  marks: Set<string>;
}

// One request after another from inside a Machine's namespace to its port 80, a fresh connection each, until the
// stop file appears. Never retried: every request that got no 200 (curl exit 52 included) is a failure. Each line
// starts with when the request began and ended (epoch ms), so a failure can be placed against what the test did.
const LOAD_SCRIPT = `
host=$1; stop=$2
while [ ! -e "$stop" ]; do
  t=$(date +%s%3N)
  out=$(curl -sS -m 5 -H "Host: $host" -w '|%{http_code}' http://127.0.0.1/ 2>&1); rc=$?
  printf '%s-%s|%s|%s\\n' "$t" "$(date +%s%3N)" "$rc" "$(printf '%s' "$out" | tr '\\n' ' ')"
  sleep 0.02
done
`;

/** Counts one line of the load script's output into `figures`. */
function countLoadLine(figures: LoadFigures, line: string): void {
  if (line === "") return;
  const [, rc, body, code] = line.split("|");
  if (rc === "0" && code?.trim() === "200") {
    figures.served++;
    figures.marks.add(body.trim().split("-")[0]);
  } else figures.failures.push(line);
}

/**
 * Starts a no-retry request loop for `host` through each named Machine's Ingress Proxy (`ployz lab exec`); `stop`
 * ends the loops and returns what each saw. Bodies are expected as `<mark>-<hostname>`. `stop({ served: n })` first
 * lets the loops run on (up to `boundMs`, default 60 s) until each has served `n` requests, so a loaded host that
 * answers slowly still yields the sample a test judges; failures keep counting meanwhile.
 */
export function labLoad(
  dir: string,
  machines: string[],
  host: string,
): { stop(until?: { served: number; boundMs?: number }): Promise<LoadFigures[]> } {
  const stopFile = join(dir, `load-${crypto.randomUUID()}`);
  const loops = machines.map((m) => {
    const child = new Deno.Command(join(ROOT, "bin", "ployz"), {
      args: ["lab", "exec", m, "--dir", dir, "--", "sh", "-c", LOAD_SCRIPT, "sh", host, stopFile],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const figures: LoadFigures = { machine: m, served: 0, failures: [], marks: new Set() };
    const done = (async (): Promise<void> => {
      let rest = "";
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        const lines = (rest + chunk).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) countLoadLine(figures, line);
      }
      countLoadLine(figures, rest);
      await child.status;
    })();
    return { figures, done };
  });
  return {
    async stop(until?: { served: number; boundMs?: number }): Promise<LoadFigures[]> {
      if (until !== undefined) {
        const deadline = Date.now() + (until.boundMs ?? 60_000);
        while (Date.now() < deadline && loops.some((l) => l.figures.served < until.served)) await sleep(100);
      }
      await Deno.writeTextFile(stopFile, "");
      await Promise.all(loops.map((l) => l.done));
      return loops.map((l) => l.figures);
    },
  };
}
