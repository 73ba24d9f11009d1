// Real Caddy on the dev dockerd: the Ingress Proxy image, a projection to busybox httpd backends by container
// address, a bad x-caddy fragment skipped, a stopping backend dropped before it stops, a pointer switch under a
// request loop with zero failures, and bet 10's start of an Ingress Proxy whose first start failed.
import assert from "node:assert/strict";
import {
  backendSpec,
  buildCaddyImage,
  get,
  MAX_RELOAD_RESETS,
  publishAll,
  splitReloadResets,
} from "./support/caddy.ts";
import { DOCKER_SOCKET, dockerTest, freePort, testSubnet } from "./support/docker.ts";
import { eventually, sleep } from "./support/poll.ts";
import {
  configDials,
  ingressContainerSpec,
  IngressHoldBook,
  loadCaddy,
  openCaddyAdmin,
  projectCaddy,
  SERVING_LABELS,
  setServingPointer,
  startIngressDriver,
  startServingLoop,
} from "../lib/serving/mod.ts";
import { openStore } from "../lib/store/mod.ts";

const INGRESS = JSON.stringify([{
  hostname: "app.test",
  "lb_port": 80,
  "container_port": 80,
  protocol: "http",
}]);

dockerTest(
  "Caddy ingress: routes, bad fragments, stopping marks, a pointer switch and bet 10 starts",
  async (s) => {
    await buildCaddyImage(DOCKER_SOCKET);
    const network = `ployz-test-${s.id}`;
    await s.engine.ensureNetwork({ name: network, ...testSubnet() });
    const runDir = await Deno.makeTempDir({ prefix: "ployz-serving-" });
    const store = openStore({ path: ":memory:", siteId: s.machineId, clusterId: "caddy-test" });
    store.machines.put({ id: s.machineId, name: "caddy-test" });
    const holder: Deno.ChildProcess[] = [];
    let loop: Awaited<ReturnType<typeof startServingLoop>> | undefined;
    let driver: ReturnType<typeof startIngressDriver> | undefined;
    const admin = openCaddyAdmin(`${runDir}/caddy/admin.sock`);
    try {
      await Deno.mkdir(`${runDir}/caddy`, { recursive: true });
      const port = freePort();
      const ingress = await s.engine.createContainer({
        ...ingressContainerSpec({
          machineId: s.machineId,
          runDir,
          httpPort: port,
          httpsPort: null,
          deployment: "sys",
          network,
        }),
        labels: { "ployz.test": s.id },
      });
      await s.engine.startContainer(ingress.id);
      const backends: Record<string, string> = {};
      for (
        const [suffix, service, deployment, labels] of [
          ["a1", "web", "A", { [SERVING_LABELS.ingress]: INGRESS }],
          ["a2", "web", "A", { [SERVING_LABELS.ingress]: INGRESS }],
          ["good", "good", "G", {
            [SERVING_LABELS.caddy]: "http://good.test {\n\treverse_proxy {{upstreams 80}}\n}\n",
          }],
          ["bad", "bad", "X", { [SERVING_LABELS.caddy]: "http://bad.test {\n\tno_such_directive here\n}\n" }],
        ] as const
      ) {
        const made = await s.engine.createContainer(
          backendSpec(s.spec, suffix, service, deployment, network, labels),
        );
        await s.engine.startContainer(made.id);
        backends[suffix] = made.id;
      }
      await publishAll(s.engine, store);
      await eventually(
        20_000,
        "the Caddy admin socket",
        async () => (await Deno.stat(`${runDir}/caddy/admin.sock`).catch(() => undefined)),
        100,
      );

      // 1. Both backends of app.test serve through Caddy; the bad fragment is skipped, the good one serves.
      const projection = projectCaddy(store.containers.list(), store.servingPointers.list(), {
        machineId: s.machineId,
      });
      const report = await loadCaddy(admin, projection);
      assert.equal(report.loaded, true, report.error ?? "");
      assert.deepEqual(report.skipped.map((p) => p.service), ["proj/bad"]);
      const seen = new Set<string>();
      for (let i = 0; i < 8; i++) seen.add((await get(port, "app.test")).body);
      assert.deepEqual([...seen].sort(), ["a1", "a2"]);
      assert.equal((await get(port, "good.test")).body, "good");
      assert.equal((await get(port, "bad.test")).status, 404);
      assert.equal((await get(port, "any.test", "/.ployz/machine")).body, s.machineId);

      // 2. Marked stopping: Caddy's loaded config drops a2 before a2 stops, and traffic goes to a1 only.
      const a2 = store.containers.get(backends.a2)!;
      const marked = projectCaddy(store.containers.list(), [], {
        machineId: s.machineId,
        stopping: new Set([a2.id]),
      });
      const dropped = await loadCaddy(admin, marked);
      assert.equal(dropped.loaded, true, dropped.error ?? "");
      assert.ok(!configDials(await admin.config()).includes(`${a2.addresses![0]}:80`));
      await s.engine.stopContainer(a2.id, { graceSeconds: 1 });
      for (let i = 0; i < 6; i++) assert.deepEqual(await get(port, "app.test"), { status: 200, body: "a1" });
      await publishAll(s.engine, store);

      // 3. Start-first switch A → B under a request loop: B healthy, pointer set, Caddy reloaded, ack, A retired.
      loop = await startServingLoop({
        store,
        engine: s.engine,
        runDir,
        dnsListen: ["127.0.0.1:0"],
        retireAfterMs: 600_000,
        tickMs: 60_000,
      });
      for (const suffix of ["b1", "b2"]) {
        const made = await s.engine.createContainer(
          backendSpec(s.spec, suffix, "web", "B", network, { [SERVING_LABELS.ingress]: INGRESS }),
        );
        await s.engine.startContainer(made.id);
        backends[suffix] = made.id;
      }
      let running = true;
      let ok = 0;
      const failures: string[] = [];
      const bodies = new Set<string>();
      const clients = [0, 1].map(async () => {
        for (let n = 0; running && n < 5_000; n++) {
          try {
            const r = await get(port, "app.test");
            if (r.status === 200) {
              ok++;
              bodies.add(r.body);
            } else failures.push(`${r.status} ${r.body}`);
          } catch (error) {
            failures.push((error as Error).message);
          }
        }
      });
      try {
        await publishAll(s.engine, store);
        await loop.pass();
        setServingPointer(store, { project: "proj", service: "web", deployment: "B" });
        // The loop's own debounced pass may load the move before this one does: either way the config now dials B
        // and not A, and the pointer is acked.
        const first = await loop.pass();
        assert.ok(first.caddy === "loaded" || first.caddy === "unchanged", first.caddy);
        const dials = configDials(await admin.config());
        const dialOf = (id: string): string => `${store.containers.get(id)!.addresses![0]}:80`;
        assert.ok(
          dials.includes(dialOf(backends.b1)) && dials.includes(dialOf(backends.b2)),
          dials.join(","),
        );
        assert.ok(!dials.includes(dialOf(backends.a1)), `A left the config: ${dials.join(",")}`);
        assert.ok(
          store.acks.list().some((a) => a.pointer === "proj/web" && a.deployment === "B"),
          "the pointer is acked once DNS and Caddy loaded it",
        );
        const second = await loop.pass();
        assert.deepEqual(second.retire.retire.map((r) => r.reason), ["acked"]);
        assert.deepEqual(second.stopped, [backends.a1]);
        await sleep(500);
      } finally {
        running = false;
        await Promise.all(clients);
      }
      // Every request counts, none is retried. A connection reset during a /load is counted and reported apart,
      // bounded (see MAX_RELOAD_RESETS), never hidden. Any other failure fails the test.
      const { resets, other } = splitReloadResets(failures);
      console.log(
        `pointer switch: ${failures.length} failed of ${ok + failures.length} requests (no retry): ` +
          `${resets.length} connection resets during a Caddy reload, ${other.length} other`,
      );
      assert.deepEqual(other, []);
      assert.ok(
        resets.length <= MAX_RELOAD_RESETS,
        `${resets.length} connection resets: ${resets.join("; ")}`,
      );
      assert.ok(ok > 20, `only ${ok} requests completed`);
      assert.ok(bodies.has("b1") && bodies.has("b2"));
      assert.equal((await s.engine.inspectContainer(backends.a1))?.state, "exited");
      const spec = JSON.parse(await Deno.readTextFile(`${runDir}/dns.json`));
      const web = spec.services.find((x: { service: string }) => x.service === "web");
      assert.equal(web.replicas.length, 2);
      await loop.stop();
      loop = undefined;

      // 4. Bet 10: a proxy whose first start failed (port held) starts once the port is free, unless held down.
      const holds = new IngressHoldBook();
      driver = startIngressDriver({
        engine: s.engine,
        record: () => ({ phase: "participating" }),
        holds,
        rescanMs: 0,
        followEvents: false,
        network,
      });
      holds.requestStop(ingress.id);
      await s.engine.stopContainer(ingress.id, { graceSeconds: 1 });
      const held = freePort();
      const nc = new Deno.Command("busybox", {
        args: ["nc", "-l", "-p", String(held)],
        stdout: "null",
        stderr: "null",
      })
        .spawn();
      holder.push(nc);
      // Wait until nc holds the port, without connecting (nc -l serves one connection, then exits).
      await eventually(5_000, "nc holding the port", () => {
        try {
          Deno.listen({ hostname: "0.0.0.0", port: held }).close();
          return Promise.resolve(undefined);
        } catch {
          return Promise.resolve(true);
        }
      }, 100);
      const second = await s.engine.createContainer({
        ...ingressContainerSpec({
          machineId: s.machineId,
          runDir,
          httpPort: held,
          httpsPort: null,
          deployment: "sys",
          network,
          slot: 2,
        }),
        labels: { "ployz.test": s.id },
      });
      await assert.rejects(s.engine.startContainer(second.id));
      const failed = await s.engine.inspectContainer(second.id);
      assert.notEqual(failed?.state, "running");
      assert.ok((failed?.lastError ?? "") !== "", "Docker recorded the failed start");
      // nc exits after its one connection; make sure it is gone and the port free.
      try {
        nc.kill("SIGKILL");
      } catch { /* already exited */ }
      await nc.status;
      holder.length = 0;
      holds.requestStop(second.id);
      const heldDown = await driver.scan();
      assert.deepEqual(heldDown, { action: "none", reason: "held_by_stop", containerId: second.id });
      assert.notEqual((await s.engine.inspectContainer(second.id))?.state, "running");
      holds.requestStart(second.id);
      const started = await driver.scan();
      assert.deepEqual(started, { action: "start", containerId: second.id });
      assert.equal((await s.engine.inspectContainer(second.id))?.state, "running");
      const after = await driver.scan();
      assert.equal(after.action, "none");
    } finally {
      for (const child of holder) {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
        await child.status;
      }
      await driver?.stop();
      await loop?.stop();
      admin.close();
      store.close();
      await Deno.remove(runDir, { recursive: true }).catch(() => {});
    }
  },
);
