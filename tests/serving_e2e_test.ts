// Serving end to end on one Machine: the real `ployzd serve` (which spawns the real `ployzd dns`), the real Caddy
// Ingress Proxy image on the dev dockerd, and the real `ployz` CLI. A Deploy fills the ingress slot and points the
// Service; HTTP through Caddy reaches it; a container resolves the Service through the Machine Gateway; a
// start-first redeploy under a request loop fails nothing and its old containers stop on acks, not on the bound;
// and with `ployzd serve` killed, DNS and ingress keep answering.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { connectMachine, RpcError } from "../lib/rpc/mod.ts";
import { buildCaddyImage, get } from "./support/caddy.ts";
import { machineEnv, outcomeOf, ployz, spawnProgram } from "./support/daemon.ts";
import { DOCKER_SOCKET } from "./support/docker.ts";
import { eventually, sleep } from "./support/poll.ts";
import { alive, run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { webService } from "./support/web_service.ts";

const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const PROJECT = `srv${RUN}`;
const HOST = "web.test";

function freePort(): number {
  const l = Deno.listen({ hostname: "0.0.0.0", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function compose(image: string, mark: string): string {
  return `name: ${PROJECT}\nservices:\n` +
    webService({ name: "web", image, mark, deploy: "{replicas: 2}", ports: [`${HOST}:80/http`] });
}

/** `ployzd serve` under its relocated set, plus what this test's layout adds: the Caddy admin socket, the Host
 * Caddy's admin API checks, and running this deno to spawn `ployzd dns` (no systemd here). */
/** Collects stderr lines as they arrive. */
function lines(stream: ReadableStream<Uint8Array>): { all: string[]; done: Promise<void> } {
  const all: string[] = [];
  const done = (async () => {
    let rest = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop() ?? "";
      all.push(...parts);
    }
    if (rest) all.push(rest);
  })();
  return { all, done };
}

/** Child processes of `pid` whose command line ends in ` dns`. */
async function dnsChildren(pid: number): Promise<number[]> {
  const out: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== pid) continue;
      const cmdline = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`)).split("\0").filter(Boolean);
      if (cmdline.at(-1) === "dns") out.push(Number(entry.name));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** `ployzd observe` processes whose command line names a path under `root`. */
async function observeProcesses(root: string): Promise<number[]> {
  const out: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => "");
    const argv = cmdline.split("\0").filter(Boolean);
    if (argv.at(-1) === "observe" && argv.some((a) => a.includes(root))) out.push(Number(entry.name));
  }
  return out;
}

Deno.test(needs(["docker"], {
  name: "Serving on one Machine: ingress fill, Caddy HTTP, gateway DNS, zero-failure redeploy, serve killed",
  async fn(t) {
    await buildCaddyImage(DOCKER_SOCKET);
    const raw = new Docker({ socketPath: DOCKER_SOCKET });
    await raw.getImage("ployz-test/busybox:1").tag({ repo: "ployz-test/busybox", tag: "2" });
    const root = await Deno.makeTempDir({ prefix: "ployz-serving-e2e-" });
    const network = `ployz-srv-${RUN}`;
    const env = await machineEnv(root, {
      dockerSocket: DOCKER_SOCKET,
      dockerRoot: join(root, "docker"),
      network,
      run: RUN,
    });
    const port = freePort();
    env.vars = {
      ...env.vars,
      PLOYZ_WG_INTERFACE: "none",
      PLOYZ_RETIRE_AFTER_SECONDS: "30",
      PLOYZ_INGRESS_HTTP_PORT: String(port),
      PLOYZ_INGRESS_HTTPS_PORT: "off",
    };
    // Inside the default Cluster network: the dns permission set may answer only clients there.
    const subnet = `10.210.${128 + Math.floor(Math.random() * 127)}.0/24`;
    const gateway = subnet.replace(/0\/24$/, "1");
    let serve: Deno.ChildProcess | undefined = spawnProgram(env, "ployzd", "serve", [
      "serve",
      "--rescan-seconds",
      "5",
    ]);
    void serve.stdout.cancel();
    const log = lines(serve.stderr);
    const dnsPids: number[] = [];
    const socket = join(env.layout.runDir, "ployz.sock");
    const composePath = join(root, "compose.yaml");
    const webContainers = async (): Promise<
      { id: string; deployment: string; state: string; address: string }[]
    > =>
      (await raw.listContainers({
        all: true,
        filters: { label: [`ployz.test=${RUN}`, `ployz.project=${PROJECT}`] },
      })).map((c: Docker.ContainerInfo) => ({
        id: c.Id,
        deployment: c.Labels["ployz.deployment"],
        state: c.State,
        address: Object.values(c.NetworkSettings?.Networks ?? {}).map((n: Docker.NetworkInfo) =>
          n.IPAddress
        )[0] ?? "",
      }));
    const exec = (id: string, ...cmd: string[]) =>
      run("docker", ["-H", `unix://${DOCKER_SOCKET}`, "exec", id, ...cmd], {
        DOCKER_HOST: `unix://${DOCKER_SOCKET}`,
      });
    try {
      await eventually(60_000, "ployzd serve answers", async () => {
        using client = connectMachine({ socketPath: socket });
        try {
          return await client.describeContract();
        } catch (error) {
          if (error instanceof RpcError && error.code === "unavailable") return undefined;
          throw error;
        }
      });

      await t.step("machine init starts Internal DNS on the Machine Gateway", async () => {
        const r = await ployz(env, "machine", "init", "--name", "m1", "--cluster", "c1", "--subnet", subnet);
        equal(r.code, 0, r.stderr);
        const spec = await eventually(30_000, "dns.json lists the gateway", async () => {
          const text = await Deno.readTextFile(join(env.layout.runDir, "dns.json"));
          return text.includes(`${gateway}:53`) ? text : undefined;
        });
        ok(spec.length > 0);
        const pids = await eventually(30_000, "ployzd dns runs", async () => {
          const found = await dnsChildren(serve!.pid);
          return found.length > 0 ? found : undefined;
        });
        dnsPids.push(...pids);
      });

      let first: { id: string; deployment: string; address: string }[] = [];
      await t.step("a Deploy fills the ingress slot and points the Service; Caddy serves it", async () => {
        await Deno.writeTextFile(composePath, compose("ployz-test/busybox:1", "v1"));
        const r = await ployz(env, "deploy", "-f", composePath, "-y", "--monitor", "1s", "--json");
        equal(r.code, 0, r.stdout + r.stderr);
        const outcome = outcomeOf(r);
        equal(outcome.status, "succeeded", JSON.stringify(outcome));
        const kinds = (outcome.completed as { kind: string }[]).map((op) => op.kind);
        deepEqual(kinds, ["create", "create", "point", "ingress"]);
        first = (await webContainers()).filter((c) => c.state === "running");
        equal(first.length, 2);
        const bodies = new Set<string>();
        await eventually(30_000, "Caddy routes web.test", async () => {
          const answer = await get(port, HOST);
          return answer.status === 200 ? answer : undefined;
        });
        for (let i = 0; i < 10; i++) {
          const answer = await get(port, HOST);
          equal(answer.status, 200, answer.body);
          bodies.add(answer.body.split("-")[0]);
        }
        deepEqual([...bodies], ["v1"]);
        using client = connectMachine({ socketPath: socket });
        const status = await client.pointerStatus({ project: PROJECT, service: "web" });
        equal(status.pointer?.deployment, first[0].deployment);
        deepEqual(status.missing, []);
      });

      await t.step(
        "a container resolves its Service through the Machine Gateway's Internal DNS",
        async () => {
          const host = (await raw.getContainer(first[0].id).inspect()).HostConfig;
          deepEqual(host.Dns, [gateway]);
          deepEqual(host.DnsSearch, [`${PROJECT}.internal`]);
          const full = await exec(first[0].id, "nslookup", `web.${PROJECT}.internal`);
          equal(full.code, 0, full.stdout + full.stderr);
          for (const c of first) match(full.stdout, new RegExp(c.address.replaceAll(".", "\\.")));
          const short = await exec(first[0].id, "nslookup", "web");
          equal(short.code, 0, short.stdout + short.stderr);
          for (const c of first) match(short.stdout, new RegExp(c.address.replaceAll(".", "\\.")));
          const unknown = await exec(first[0].id, "nslookup", `nope.${PROJECT}.internal`);
          ok(unknown.code !== 0, unknown.stdout);
        },
      );

      await t.step(
        "a start-first redeploy under load fails no request; old containers stop on acks",
        async () => {
          await Deno.writeTextFile(composePath, compose("ployz-test/busybox:2", "v2"));
          let loading = true;
          let served = 0;
          const failures: string[] = [];
          const seen = new Set<string>();
          const clients = [0, 1].map(async () => {
            while (loading) {
              try {
                const answer = await get(port, HOST);
                if (answer.status === 200) {
                  served++;
                  seen.add(answer.body.split("-")[0]);
                } else failures.push(`${answer.status} ${answer.body}`);
              } catch (error) {
                failures.push((error as Error).message);
              }
              await sleep(20);
            }
          });
          let deployedAt = 0;
          try {
            const r = await ployz(env, "deploy", "-f", composePath, "-y", "--monitor", "1s", "--json");
            deployedAt = Date.now();
            equal(r.code, 0, r.stdout + r.stderr);
            const outcome = outcomeOf(r);
            const retiring = outcome.retiring as { container: { id: string }; pointer_moved: boolean }[];
            deepEqual(retiring.map((x) => x.pointer_moved), [true, true]);
            deepEqual(retiring.map((x) => x.container.id).sort(), first.map((c) => c.id).sort());
            // The client stopped nothing: the old containers still run when the Deploy returns or stop on acks.
            await eventually(25_000, "the retire loop stops the old containers", async () => {
              const now = await webContainers();
              const old = now.filter((c) => first.some((f) => f.id === c.id));
              return old.every((c) => c.state !== "running") ? old : undefined;
            });
          } finally {
            await sleep(1_000);
            loading = false;
            await Promise.all(clients);
          }
          ok(Date.now() - deployedAt < 30_000, "stopped before the 30 s bound");
          deepEqual(failures, [], `${failures.length} failed of ${served + failures.length}`);
          ok(seen.has("v2"), `served ${[...seen]}`);
          ok(served > 20, `only ${served} requests served`);
          for (const c of first) {
            const name = (await raw.getContainer(c.id).inspect()).Name.replace(/^\//, "");
            ok(log.all.some((l) => l.includes(`retired "${name}" (acked)`)), log.all.join("\n"));
          }
          const answer = await get(port, HOST);
          match(answer.body, /^v2-/);
        },
      );

      await t.step("with ployzd serve killed, DNS and ingress keep answering", async () => {
        const current = (await webContainers()).filter((c) => c.state === "running");
        equal(current.length, 2);
        serve!.kill("SIGKILL");
        await serve!.status;
        serve = undefined;
        await sleep(500);
        for (let i = 0; i < 5; i++) equal((await get(port, HOST)).status, 200);
        const r = await exec(current[0].id, "nslookup", `web.${PROJECT}.internal`);
        equal(r.code, 0, r.stdout + r.stderr);
        for (const c of current) match(r.stdout, new RegExp(c.address.replaceAll(".", "\\.")));
        ok(dnsPids.every(alive), "ployzd dns ended with the daemon");
      });
    } finally {
      if (serve !== undefined) {
        try {
          serve.kill("SIGTERM");
        } catch {
          // Already gone.
        }
        await serve.status;
      }
      // The daemon's children (DNS, and the Observe Store it starts on every start) outlive a killed daemon.
      for (const pid of await observeProcesses(root)) dnsPids.push(pid);
      for (const pid of dnsPids) {
        try {
          if (alive(pid)) Deno.kill(pid, "SIGTERM");
        } catch {
          // Gone.
        }
      }
      for (const pid of dnsPids) {
        for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
        if (alive(pid)) Deno.kill(pid, "SIGKILL");
      }
      await log.done;
      const filters = { label: [`ployz.test=${RUN}`] };
      for (const c of await raw.listContainers({ all: true, filters })) {
        await raw.getContainer(c.Id).remove({ force: true }).catch(() => {});
      }
      for (const n of await raw.listNetworks({ filters })) {
        await raw.getNetwork(n.Id).remove().catch(() => {});
      }
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
}));
