// The README's first command: examples/hello/up.sh deploys the page and it answers on port 8080, beside the
// Ingress Proxy (Caddy on port 80) and Internal DNS the Machine runs; examples/hello/down.sh leaves nothing behind
// (containers, daemon, its DNS child, network, state dir).
import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { DOCKER_SOCKET, isSocket, randomSubnet } from "./support/docker.ts";
import { alive, ROOT, run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { eventually, sleep } from "./support/poll.ts";

const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);

function portFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "0.0.0.0", port }).close();
    return true;
  } catch {
    return false;
  }
}

/** Pids of the running processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      // The fields after the command's closing parenthesis: state, ppid, …
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(entry.name));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

function cmdline(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
  } catch {
    return "";
  }
}

Deno.test(needs(["docker"], {
  name: "examples/hello: up.sh serves the page on port 8080 and down.sh removes everything",
  async fn() {
    ok(portFree(8080), "port 8080 is taken on this host: the example publishes it");
    ok(portFree(80), "port 80 is taken on this host: the example's Ingress Proxy publishes it");
    const state = join(await Deno.makeTempDir({ prefix: "ployz-hello-" }), "state");
    const network = `ployz-hello-${RUN}`;
    const env = {
      PLOYZ_DOCKER_SOCKET: DOCKER_SOCKET,
      PLOYZ_HELLO_DIR: state,
      PLOYZ_DOCKER_NETWORK: network,
      PLOYZ_DOCKER_LABELS: `ployz.test=${RUN}`,
      PLOYZ_HELLO_SUBNET: randomSubnet("10.218"),
    };
    const raw = new Docker({ socketPath: DOCKER_SOCKET });
    const labelled = () => raw.listContainers({ all: true, filters: { label: [`ployz.test=${RUN}`] } });
    let pid: number | undefined;
    let dns: number[] = [];
    try {
      const up = await run(join(ROOT, "examples", "hello", "up.sh"), [], env);
      equal(up.code, 0, up.stdout + up.stderr);
      match(up.stdout, /hello is up: http:\/\/127\.0\.0\.1:8080\//);
      pid = Number(await Deno.readTextFile(join(state, "serve.pid")));
      const page = await fetch("http://127.0.0.1:8080/");
      equal(page.status, 200);
      match(await page.text(), /ployz test/);
      // The Project's one container and the Machine's Ingress Proxy, which the Deploy filled.
      const made = (await labelled()).map((c: { Labels: Record<string, string> }) =>
        `${c.Labels["ployz.project"]}/${c.Labels["ployz.service"]}`
      );
      equal(made.sort().join(","), "hello/web,ployz-system/caddy");
      // The daemon runs Internal DNS as its child (no systemd here); it may still be starting.
      const until = Date.now() + 30_000;
      while ((dns = childrenOf(pid).filter((c) => / dns$/.test(cmdline(c).trim()))).length === 0) {
        ok(Date.now() < until, `ployzd serve (pid ${pid}) runs no ployzd dns child`);
        await sleep(200);
      }
      // Real figures, not gaps: the Observe Store reads /proc and the cgroups through the example's host view.
      const topEnv = { ...env, PLOYZ_RUN_DIR: join(state, "run"), PLOYZ_CONFIG_DIR: join(state, "config") };
      let lastTop = "";
      const figures = await eventually(60_000, "ployz top shows numbers for hello/web", async () => {
        const top = await run(join(ROOT, "bin", "ployz"), ["top", "--json"], topEnv);
        lastTop = top.stdout + top.stderr;
        const web = JSON.parse(top.stdout).machines?.[0]?.services
          ?.find((s: { project: string; service: string }) => s.project === "hello" && s.service === "web");
        const values = web?.values as Record<string, { avg?: number; sum?: number; gap?: string }> | null;
        return values && ["cpu", "memory"].every((m) => values[m]?.gap === undefined) ? values : undefined;
      }).catch((error) => {
        throw new Error(`${error instanceof Error ? error.message : error}; last ployz top: ${lastTop}`);
      });
      ok((figures.memory.avg ?? figures.memory.sum ?? 0) > 0, JSON.stringify(figures.memory));
      // A figure each, not a gap and not missing.
      for (const m of ["net_rx", "net_tx", "disk_read", "disk_write"]) {
        equal(typeof (figures[m]?.avg ?? figures[m]?.sum), "number", `${m}: ${JSON.stringify(figures[m])}`);
      }

      const down = await run(join(ROOT, "examples", "hello", "down.sh"), [], env);
      equal(down.code, 0, down.stdout + down.stderr);
      equal((await labelled()).length, 0, "a container is left");
      ok(!alive(pid), `ployzd serve (pid ${pid}) still runs`);
      for (const child of dns) ok(!alive(child), `ployzd dns (pid ${child}) still runs`);
      ok((await raw.listNetworks({ filters: { name: [network] } })).length === 0, "the network is left");
      ok(!isSocket(join(state, "run", "ployz.sock")));
      await Deno.stat(state).then(() => ok(false, "the state dir is left"), () => {});
      ok(portFree(8080), "port 8080 is still bound");
      ok(portFree(80), "port 80 is still bound");
    } finally {
      for (const p of [...(pid === undefined ? [] : [pid]), ...dns]) if (alive(p)) Deno.kill(p, "SIGKILL");
      for (const c of await labelled()) await raw.getContainer(c.Id).remove({ force: true }).catch(() => {});
      await raw.getNetwork(network).remove().catch(() => {});
      await Deno.remove(join(state, ".."), { recursive: true });
    }
  },
}));
