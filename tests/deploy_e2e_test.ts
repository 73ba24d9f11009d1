// Client-first Deploy end to end: the real `ployzd serve` under its relocated permission set, the real `ployz`
// CLI under the `cli` set, the real dockerd. Every object is labelled `ployz.test=<run>` and removed by label.
import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { connectMachine, type MachineClient } from "../lib/rpc/mod.ts";
import { type MachineEnv, machineEnv, outcomeOf, ployz, spawnProgram, startServe } from "./support/daemon.ts";
import { DOCKER_SOCKET, dockerRootOf, freePort, IMAGE, removeByLabel } from "./support/docker.ts";
import { needs } from "./support/needs.ts";
import { sleep } from "./support/poll.ts";

const IMAGE2 = "ployz-test/busybox:2";
const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const NETWORK = `ployz-deploy-${RUN}`;
const SUBNET = `10.212.${1 + Math.floor(Math.random() * 254)}.0/24`;

async function http(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/`);
  return await response.text();
}

interface ServiceText {
  image?: string;
  replicas?: number;
  port?: number;
  check?: string;
  env?: string;
  hook?: string;
  extra?: string;
}

/** A compose Service running busybox httpd, healthy when its own page answers. */
function serviceYaml(name: string, s: ServiceText): string {
  const lines = [
    `  ${name}:`,
    `    image: ${s.image ?? IMAGE}`,
    `    command: ["httpd", "-f", "-p", "80", "-h", "/www"]`,
    `    deploy: {replicas: ${s.replicas ?? 1}}`,
    `    environment: {MARK: "${s.env ?? "a"}"}`,
    // busybox httpd as PID 1 ignores SIGTERM: do not wait Docker's 10 s for it.
    `    stop_grace_period: 1s`,
    `    healthcheck:`,
    `      test: ["CMD", "wget", "-q", "-O-", "${s.check ?? "http://127.0.0.1/"}"]`,
    `      interval: 1s`,
    `      timeout: 2s`,
    `      retries: 2`,
  ];
  if (s.port !== undefined) lines.push(`    x-ports: ["${s.port}:80/tcp@host"]`);
  if (s.hook !== undefined) {
    lines.push(`    x-pre_deploy: {command: ["sh", "-c", "${s.hook}"], timeout: 30s}`);
  }
  if (s.extra !== undefined) lines.push(s.extra);
  return lines.join("\n");
}

async function writeCompose(
  env: MachineEnv,
  project: string,
  services: Record<string, ServiceText>,
): Promise<string> {
  const path = join(env.root, `${project}.yaml`);
  const body = Object.entries(services).map(([n, s]) => serviceYaml(n, s)).join("\n");
  await Deno.writeTextFile(path, `name: ${project}\nservices:\n${body}\n`);
  return path;
}

async function containers(client: MachineClient, project: string) {
  return (await client.listContainers({ project })).containers;
}

function deployArgs(path: string, ...more: string[]): string[] {
  return ["deploy", "-f", path, "-y", "--monitor", "1s", ...more];
}

Deno.test(needs(["docker"], {
  name: "ployz deploys through ployzd serve: health-gated, compensated, resumable, partial",
  sanitizeResources: true,
  async fn(t) {
    const root = await Deno.makeTempDir({ prefix: "ployz-deploy-" });
    const raw = new Docker({ socketPath: DOCKER_SOCKET });
    // The real data root: a failed hook's output reaches the Deploy through the Observe Store, which reads it there.
    const env = await machineEnv(root, {
      dockerSocket: DOCKER_SOCKET,
      dockerRoot: await dockerRootOf(raw),
      network: NETWORK,
      run: RUN,
    });
    await raw.getImage(IMAGE).tag({ repo: "ployz-test/busybox", tag: "2" });
    const serving = await startServe(env);
    const client = connectMachine({ socketPath: join(env.layout.runDir, "ployz.sock") });
    const project = `dep${RUN}`;
    const port = freePort();
    try {
      await t.step("a missing daemon is a clear unavailable error", async () => {
        const r = await ployz({ ...env, vars: { ...env.vars, PLOYZ_RUN_DIR: join(root, "nowhere") } }, "ps");
        equal(r.code, 1);
        match(
          r.stderr,
          /error\[unavailable\]: Cannot reach ployzd at ".*nowhere\/ployz\.sock": .*is "ployzd serve" running\?/,
        );
      });

      await t.step("machine init founds the Cluster", async () => {
        const r = await ployz(env, "machine", "init", "--name", "m1", "--cluster", "c1", "--subnet", SUBNET);
        equal(r.code, 0, r.stderr);
        match(r.stdout, /Machine "m1" .* is participating in Cluster "c1"/);
      });

      const base = { web: { port }, api: { replicas: 2 } };
      await t.step("deploy of two Services answers HTTP from the host", async () => {
        const path = await writeCompose(env, project, base);
        const r = await ployz(env, ...deployArgs(path));
        equal(r.code, 0, r.stdout + r.stderr);
        match(r.stdout, /succeeded/);
        match(await http(port), /ployz test/);
        equal((await containers(client, project)).length, 3);
      });

      await t.step("the same deploy again has nothing to do", async () => {
        const r = await ployz(env, ...deployArgs(join(root, `${project}.yaml`)));
        equal(r.code, 0, r.stderr);
        match(r.stdout, /Nothing to do: 3 containers up to date/);
      });

      await t.step("an image change is a health-gated replacement", async () => {
        const path = await writeCompose(env, project, { ...base, web: { port, image: IMAGE2 } });
        const r = await ployz(env, ...deployArgs(path, "--json"));
        equal(r.code, 0, r.stdout + r.stderr);
        const outcome = outcomeOf(r, { onlyJson: true });
        equal(outcome.status, "succeeded");
        const done = outcome.completed as {
          kind: string;
          order: string;
          service: string;
          deployment: string;
        }[];
        equal(done.length, 2, JSON.stringify(done));
        equal(done[0].kind, "replace");
        equal(done[0].order, "stop-first");
        // Once the new container passed health, the Service's Serving Pointer moves to this Deployment.
        equal(done[1].kind, "point");
        equal(done[1].service, "web");
        equal(done[1].deployment, outcome.deployment_id);
        // A stop-first replacement stopped the old container itself: nothing is left for the retire loop.
        equal((outcome.retiring as unknown[]).length, 0);
        match(await http(port), /ployz test/);
        const web = (await containers(client, project)).filter((c) => c.service === "web");
        equal(web.length, 1);
        equal(web[0].image, IMAGE2);
      });

      await t.step(
        "a replacement failing health is compensated and the old container keeps serving",
        async () => {
          const path = await writeCompose(env, project, {
            ...base,
            web: { port, image: IMAGE2, check: "http://127.0.0.1:81/" },
          });
          const r = await ployz(env, ...deployArgs(path, "--json"));
          equal(r.code, 1, r.stdout + r.stderr);
          const outcome = outcomeOf(r, { onlyJson: true });
          equal(outcome.status, "failed");
          const steps = (outcome.compensation as { action: string; ok: boolean }[]).map((s) =>
            `${s.action}:${s.ok}`
          );
          equal(steps.join(","), "stop_new:true,restart_old:true");
          // restart_old is ok only once the old container passed its healthcheck again: it answers at once.
          match(await http(port), /ployz test/);
          const web = (await containers(client, project)).filter((c) => c.service === "web");
          equal(web.length, 2, "the failed new container is kept as evidence");
          equal(web.filter((c) => c.state === "running").length, 1);
        },
      );

      await t.step("a passing hook runs before its Service changes", async () => {
        const path = await writeCompose(env, project, {
          web: { port, image: IMAGE2 },
          api: { replicas: 2, env: "b", hook: "echo migrating" },
        });
        const r = await ployz(env, ...deployArgs(path, "--json"));
        equal(r.code, 0, r.stdout + r.stderr);
        const kinds = (outcomeOf(r, { onlyJson: true }).completed as { kind: string }[]).map((op) => op.kind);
        equal(kinds[0], "hook");
        ok(kinds.includes("replace"));
      });

      await t.step("a failing hook stops the Deploy and its container is kept", async () => {
        const path = await writeCompose(env, project, {
          web: { port, image: IMAGE2 },
          api: { replicas: 2, env: "c", hook: "echo boom; exit 3" },
        });
        const r = await ployz(env, ...deployArgs(path));
        equal(r.code, 1, r.stdout + r.stderr);
        match(r.stdout, /exited with code 3/);
        match(r.stdout, /boom/);
        // Both replacements, the Serving Pointer move after them, and the removal of the containers the passing
        // hook's Deploy left for the retire loop (stale in their slots, whether or not it stopped them yet).
        match(
          r.stdout,
          new RegExp(
            [
              "Not attempted \\(5\\):",
              "  - replace \\S+-api-1-\\S+ with .*, start-first .* is left for the retire loop",
              "  - replace \\S+-api-2-\\S+ with .*, start-first .* is left for the retire loop",
              `  - point "${project}/api" at Deployment [0-9a-f]{8} once its containers passed health`,
              "  - remove \\S+-api-1-\\S+ \\(duplicate\\)",
              "  - remove \\S+-api-2-\\S+ \\(duplicate\\)",
            ].join("\n"),
          ),
        );
        const hooks = (await containers(client, project)).filter((c) => c.slot === "hook");
        equal(hooks.length, 1);
        equal(hooks[0].exit_code, 3);
      });

      await t.step("scale up and down", async () => {
        const path = await writeCompose(env, project, {
          web: { port, image: IMAGE2 },
          api: { replicas: 2, env: "b" },
        });
        equal((await ployz(env, ...deployArgs(path))).code, 0);
        let r = await ployz(env, "scale", `${project}/api=3`, "-y");
        equal(r.code, 0, r.stdout + r.stderr);
        const api = () =>
          containers(client, project).then((cs) =>
            cs.filter((c) => c.service === "api" && c.slot !== "hook")
          );
        equal((await api()).length, 3);
        r = await ployz(env, "scale", `${project}/api=1`, "-y");
        equal(r.code, 0, r.stdout + r.stderr);
        equal((await api()).length, 1);
        r = await ployz(env, "ls", "--json");
        const listed = JSON.parse(r.stdout).services.find((s: { service: string }) => s.service === "api");
        equal(listed.total, 1);
      });

      await t.step("a CLI killed mid-deploy and re-run creates no duplicates and finishes", async () => {
        const path = await writeCompose(env, project, {
          web: { port, image: IMAGE2 },
          api: { replicas: 3, env: "d" },
        });
        const child = spawnProgram(env, "ployz", "cli", ["deploy", "-f", path, "-y", "--monitor", "4s"]);
        // Drain its output: a closed pipe would fail the run before it reaches the Machine.
        const drained = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
        const until = Date.now() + 60_000;
        const apis = async () =>
          (await containers(client, project)).filter((c) => c.service === "api" && c.slot !== "hook");
        // Scaled to 1 before: a second container means the first run is past its first create.
        while ((await apis()).length < 2) {
          ok(Date.now() < until, "the first run never created a container");
          await sleep(100);
        }
        child.kill("SIGKILL");
        await child.status;
        await drained;
        const r = await ployz(env, ...deployArgs(path));
        equal(r.code, 0, r.stdout + r.stderr);
        match(r.stdout, /Resuming Deployment/);
        const deployment = r.stdout.match(/succeeded \(Deployment ([0-9a-f]{8}), at /)?.[1];
        ok(deployment !== undefined, r.stdout);
        const api = await apis();
        const fresh = api.filter((c) => c.deployment.startsWith(deployment));
        equal(fresh.length, 3, JSON.stringify(api.map((c) => [c.name, c.slot, c.deployment])));
        equal(new Set(fresh.map((c) => c.slot)).size, 3);
        // The start-first replacement of slot 1 left the old container (scaled to 1 before) for the retire loop:
        // the Outcome names it, and the loop stops it once this Machine acked the moved Serving Pointer.
        const old = api.filter((c) => !fresh.includes(c));
        equal(old.length, 1, JSON.stringify(api.map((c) => [c.name, c.slot, c.deployment])));
        equal(old[0].slot, "1");
        match(r.stdout, new RegExp(`Left for the retire loop \\(1\\):.*\\n  - ${old[0].name} on m1\\n`));
        const until2 = Date.now() + 60_000;
        while ((await apis()).some((c) => c.id === old[0].id && c.state === "running")) {
          ok(Date.now() < until2, `the retire loop never stopped "${old[0].name}"`);
          await sleep(500);
        }
      });

      await t.step("an image present nowhere fails before anything runs, naming it", async () => {
        // A registry on loopback that does not answer: no Machine holds the image and no registry serves it.
        const path = await writeCompose(env, project, {
          web: { port, image: IMAGE2 },
          api: { replicas: 3, env: "d", image: "127.0.0.1:1/ployz-test/nope:1" },
        });
        const r = await ployz(env, ...deployArgs(path));
        equal(r.code, 1);
        match(
          r.stderr,
          /^error\[unavailable\]: Image "127\.0\.0\.1:1\/ployz-test\/nope:1" of Service "api" is on no observed Machine, and registry "127\.0\.0\.1:1" could not be reached: .*connection refused\n$/,
        );
      });

      await t.step("a host port already taken is a clear failure", async () => {
        const taken = Deno.listen({ hostname: "0.0.0.0", port: freePort() });
        try {
          const busy = (taken.addr as Deno.NetAddr).port;
          const path = await writeCompose(env, `${project}x`, { edge: { port: busy } });
          const r = await ployz(env, ...deployArgs(path));
          equal(r.code, 1, r.stdout + r.stderr);
          match(r.stdout, new RegExp(`Failed at stage "deploy": create .*\\n.*${busy}`));
        } finally {
          taken.close();
        }
      });

      await t.step("rm removes the Project's containers", async () => {
        for (const p of [project, `${project}x`]) {
          const r = await ployz(env, "rm", p, "-y");
          equal(r.code, 0, r.stdout + r.stderr);
          equal((await containers(client, p)).length, 0);
        }
      });
    } finally {
      client.close();
      await serving.stop();
      await removeByLabel(raw, `ployz.test=${RUN}`);
      await Deno.remove(root, { recursive: true });
    }
  },
}));
