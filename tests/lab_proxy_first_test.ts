// Proxy first, with no retries, on a real three-Machine lab (ployzd, Caddy and Internal DNS per Machine): a
// Service with 3 replicas (one per Machine) routed by every Machine's Ingress Proxy. A no-retry request loop through
// all three ingresses, started the moment the first Deploy returns, fails nothing (each fill counts as done only once
// its proxy serves the routes); then `ployz stop` of one replica, a stop-first redeploy, `ployz restart` and a scale
// 3→1, each under the loop, fail nothing: every stop is preceded by the container leaving every proxy, and the
// output says so. During the stop-first redeploy, slow requests (2 s each) stay in flight to the old replicas as they
// leave: each Machine drains them before the stop, so every one completes with 200.
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildCaddyImage } from "./support/caddy.ts";
import { outcomeOf } from "./support/daemon.ts";
import { DOCKER_SOCKET, IMAGE } from "./support/docker.ts";
import { type Lab, labLoad, type LoadFigures, machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { ingressContainerName, kernelMigratesRequests, MIGRATE_REQ_SYSCTL } from "../lib/serving/mod.ts";
import { webService } from "./support/web_service.ts";
import { sleep } from "./support/poll.ts";
import { ROOT } from "./support/spawn.ts";

const HOST = "api.pf.test";

function compose(mark: string, replicas: number): string {
  return "name: pf\nservices:\n" + webService({
    name: "api",
    mark,
    deploy: `{replicas: ${replicas}, update_config: {order: stop-first}}`,
    ports: [`${HOST}:80/http`],
    slowCgi: true,
  });
}

// Starts a 2 s request through the Machine's ingress every 0.4 s until the stop file exists, then waits for all of
// them; each prints `<curl exit>|<body>|<status>`.
const SLOW_SCRIPT = `
host=$1; stop=$2
while [ ! -e "$stop" ]; do
  ( out=$(curl -sS -m 15 -H "Host: $host" -w '|%{http_code}' http://127.0.0.1/cgi-bin/slow 2>&1); rc=$?
    printf '%s|%s\\n' "$rc" "$(printf '%s' "$out" | tr '\\n' ' ')" ) &
  sleep 0.4
done
wait
`;

function slowRequests(dir: string, machines: string[]): { stop(): Promise<string[]> } {
  const stopFile = join(dir, `slow-${crypto.randomUUID()}`);
  const children = machines.map((m) =>
    new Deno.Command(join(ROOT, "bin", "ployz"), {
      args: ["lab", "exec", m, "--dir", dir, "--", "sh", "-c", SLOW_SCRIPT, "sh", HOST, stopFile],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output()
  );
  return {
    async stop(): Promise<string[]> {
      await Deno.writeTextFile(stopFile, "");
      const outs = await Promise.all(children);
      return outs.flatMap((o) => new TextDecoder().decode(o.stdout).split("\n").filter((l) => l !== ""));
    },
  };
}

/** What the test did and when (epoch ms), to place a failed request against. */
type Timeline = [string, number][];

/**
 * Runs `act` inside the load loop through every Machine, `beforeMs` after the loop starts and `afterMs` before it
 * stops; answers what `act` answered, the loop's figures (the loop stops even when `act` throws) and the timeline
 * of `act`, to which `act` adds its own steps through `mark`.
 */
async function underLoad<T>(
  lab: Lab,
  beforeMs: number,
  afterMs: number,
  act: (mark: (what: string) => void) => Promise<T>,
): Promise<{ result: T; figures: LoadFigures[]; timeline: Timeline }> {
  const timeline: Timeline = [];
  const mark = (what: string): void => void timeline.push([what, Date.now()]);
  const loads = labLoad(lab.dir, ["m1", "m2", "m3"], HOST);
  let figures: LoadFigures[] = [];
  let result: T;
  try {
    await sleep(beforeMs);
    mark("act began");
    result = await act(mark);
    mark("act ended");
    await sleep(afterMs);
  } finally {
    figures = await loads.stop({ served: 10 });
  }
  return { result, figures, timeline };
}

// Each Ingress Proxy's config loads, from Caddy's own log: `<machine> caddy load` at Caddy's time.
async function caddyLoads(lab: Lab, machines: string[]): Promise<Timeline> {
  const out: Timeline = [];
  for (const m of machines) {
    const logs = await lab.docker(m, ["logs", ingressContainerName()]);
    for (const line of (logs.stdout + logs.stderr).split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        const entry = JSON.parse(line) as { ts?: number; msg?: string };
        if (entry.msg === "load complete" && typeof entry.ts === "number") {
          out.push([`${m} caddy load complete`, Math.round(entry.ts * 1000)]);
        }
      } catch { /* not a JSON log line */ }
    }
  }
  return out;
}

/**
 * Reads each Machine's daemon log every 250 ms and keeps its new `serving:` lines with the time they were read, so a
 * failure can be placed against when each proxy changed what it sends a Service to.
 */
function servingLog(lab: Lab, machines: string[]): { stop(): Promise<Timeline> } {
  const out: Timeline = [];
  const offsets = new Map<string, number>();
  let running = true;
  const read = async (): Promise<void> => {
    for (const m of machines) {
      const bytes = await Deno.readFile(join(lab.dir, m, "ployzd.log"));
      const from = offsets.get(m) ?? bytes.length;
      offsets.set(m, bytes.length);
      const now = Date.now();
      for (const line of new TextDecoder().decode(bytes.subarray(from)).split("\n")) {
        if (line.includes("serving:")) out.push([`${m} log: ${line}`, now]);
      }
    }
  };
  const loop = (async () => {
    await read();
    while (running) {
      await sleep(250);
      await read();
    }
  })();
  return {
    async stop(): Promise<Timeline> {
      running = false;
      await loop;
      return out;
    },
  };
}

/**
 * On a failed request, prints every failure and every step of `timeline` plus each Caddy load in one ordered list,
 * in ms from the first step, so the failure names its phase.
 */
async function printTimeline(
  lab: Lab,
  figures: LoadFigures[],
  timeline: Timeline,
  logged: Timeline = [],
): Promise<void> {
  if (figures.every((f) => f.failures.length === 0) || timeline.length === 0) return;
  const zero = timeline[0][1];
  const events: Timeline = [...timeline, ...logged];
  for (const [what, at] of await caddyLoads(lab, figures.map((f) => f.machine))) {
    if (at >= zero - 5_000) events.push([what, at]);
  }
  for (const f of figures) {
    for (const line of f.failures) {
      const [began, ended] = line.split("|")[0].split("-").map(Number);
      events.push([`${f.machine} request began (ended at +${ended - zero} ms): ${line}`, began]);
    }
  }
  events.sort((a, b) => a[1] - b[1]);
  console.log(events.map(([what, at]) => `  +${at - zero} ms ${what}`).join("\n"));
}

function summary(what: string, figures: LoadFigures[]): string {
  const total = figures.reduce((n, f) => n + f.served + f.failures.length, 0);
  const failed = figures.reduce((n, f) => n + f.failures.length, 0);
  return `${what}: ${failed} failed of ${total} requests (no retry) via ` +
    figures.map((f) => `${f.machine} ${f.served + f.failures.length}`).join(", ");
}

function assertNoFailure(what: string, figures: LoadFigures[]): void {
  console.log(summary(what, figures));
  for (const f of figures) {
    assert.deepEqual(f.failures, [], `${what} via ${f.machine}`);
    assert.ok(f.served >= 10, `${what} via ${f.machine}: only ${f.served} served`);
  }
}

Deno.test(needs(["lab"], {
  name:
    "stop, stop-first redeploy, restart and scale 3→1 leave every proxy first: 0 failed requests, no retry",
  async fn(t) {
    await buildCaddyImage(DOCKER_SOCKET);
    await using lab = await startLab("pf", 3, {
      upArgs: ["--image", "ployz-test/busybox:1", "--image", "ployz-system/caddy:2"],
    });
    await machinesUp(lab, "m1", 3);
    const path = join(lab.dir, "pf.yaml");
    const deploy = async (mark: string, replicas: number): Promise<Record<string, unknown>> => {
      await Deno.writeTextFile(path, compose(mark, replicas));
      const r = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s", "--json"]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const outcome = outcomeOf(r);
      assert.equal(outcome.status, "succeeded", JSON.stringify(outcome));
      return outcome;
    };
    const running = async (m: string): Promise<string[]> => {
      const r = await lab.docker(m, [
        "ps",
        "--format",
        "{{.Names}}",
        "--filter",
        "label=ployz.project=pf",
        "--filter",
        "status=running",
      ]);
      return r.stdout.split("\n").filter((s) => s !== "");
    };

    await t.step("a first Deploy: a no-retry loop started the moment it returns fails nothing", async () => {
      await deploy("v1", 3);
      const loads = labLoad(lab.dir, ["m1", "m2", "m3"], HOST);
      await sleep(3_000);
      assertNoFailure("first Deploy, loop from its return", await loads.stop({ served: 10 }));
      for (const m of ["m1", "m2", "m3"]) assert.equal((await running(m)).length, 1, `one replica on ${m}`);
    });

    await t.step(
      "each Ingress Proxy migrates the connections queued on a listener a config load closes",
      async () => {
        // Every load binds a new SO_REUSEPORT listener and closes the old one: without migration, a connection
        // queued on the old one is reset and its request gets no reply. A kernel without the setting (before 5.14)
        // gets a proxy without it, which Docker would refuse to create otherwise.
        const want = kernelMigratesRequests() ? "1" : undefined;
        for (const m of ["m1", "m2", "m3"]) {
          const r = await lab.docker(m, [
            "inspect",
            "-f",
            "{{json .HostConfig.Sysctls}}",
            ingressContainerName(),
          ]);
          const sysctls = JSON.parse(r.stdout) as Record<string, string> | null;
          assert.equal(sysctls?.[MIGRATE_REQ_SYSCTL], want, `${m}: ${r.stdout}${r.stderr}`);
        }
      },
    );

    await t.step("ployz stop of one replica and start again under load fails nothing", async () => {
      const { figures, timeline } = await underLoad(lab, 1_000, 3_000, async (mark) => {
        const stopped = await lab.on("m1", ["stop", "pf/api", "--machine", "m1"]);
        mark("ployz stop returned");
        assert.equal(stopped.code, 0, stopped.stderr + stopped.stdout);
        assert.match(
          stopped.stdout,
          /Stopped pf-api-1-.* on "m1" \(exited\); left every proxy first \(3 Machines acked in \d+ ms\)/,
        );
        console.log(stopped.stdout.trim());
        await sleep(1_000);
        mark("ployz start began");
        const started = await lab.on("m1", ["start", "pf/api", "--machine", "m1"]);
        mark("ployz start returned");
        assert.equal(started.code, 0, started.stderr + started.stdout);
      });
      await printTimeline(lab, figures, timeline);
      assertNoFailure("stop and start of one replica", figures);
    });

    await t.step(
      "a stop-first redeploy under load fails nothing; each old container left first",
      async () => {
        const watch = servingLog(lab, ["m1", "m2", "m3"]);
        const loads = labLoad(lab.dir, ["m1", "m2", "m3"], HOST);
        const slow = slowRequests(lab.dir, ["m1", "m2", "m3"]);
        let figures: LoadFigures[] = [];
        let slowLines: string[] = [];
        let outcome: Record<string, unknown> = {};
        const timeline: Timeline = [];
        let logged: Timeline = [];
        try {
          await sleep(2_500);
          timeline.push(["ployz deploy began", Date.now()]);
          outcome = await deploy("v2", 3);
          timeline.push(["ployz deploy returned", Date.now()]);
          await sleep(2_000);
        } finally {
          figures = await loads.stop({ served: 10 });
          slowLines = await slow.stop();
          logged = await watch.stop();
        }
        await printTimeline(lab, figures, timeline, logged);
        const zero = timeline[0]?.[1] ?? 0;
        console.log(logged.map(([what, at]) => `  +${at - zero} ms ${what}`).join("\n"));
        assertNoFailure("stop-first redeploy", figures);
        const left = outcome.left as {
          acked: string[];
          missing: string[];
          "drained_ms"?: number;
          "in_flight"?: number;
        }[];
        assert.equal(left.length, 3, JSON.stringify(outcome));
        for (const l of left) assert.deepEqual([l.acked.length, l.missing], [3, []]);
        // Slow requests were in flight to the old replicas when they left: drained, none cut by the stop.
        console.log(
          `slow requests during the stop-first redeploy: ${slowLines.length}; drains: ` +
            left.map((l) => `${l.drained_ms} ms (${l.in_flight} open at the end)`).join(", "),
        );
        assert.ok(slowLines.length >= 10, slowLines.join("\n"));
        assert.deepEqual(
          slowLines.filter((l) => !/^0\|slow \|200$/.test(l)),
          [],
          "every slow request answered 200",
        );
        for (const l of left) assert.equal(l.in_flight, 0, JSON.stringify(l));
        assert.ok(left.some((l) => (l.drained_ms ?? 0) > 0), `a drain waited: ${JSON.stringify(left)}`);
        assert.ok(figures.every((f) => f.marks.has("v2")), "the new replicas serve");
      },
    );

    await t.step("ployz restart of every replica under load fails nothing; each left first", async () => {
      const { result: r, figures } = await underLoad(
        lab,
        1_000,
        1_000,
        () => lab.on("m1", ["restart", "pf/api", "--monitor", "1s"]),
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.equal(
        r.stdout.match(/; left every proxy first \(3 Machines acked in \d+ ms\)/g)?.length,
        3,
        r.stdout,
      );
      assertNoFailure("restart of 3 replicas", figures);
    });

    await t.step(
      "a replica stopped while the only other one restarts keeps serving until that one passes health",
      async () => {
        // Two replicas of another Service, one on m1 and one on m2. After its first start a replica is healthy only
        // once /tmp/ready exists, which the test makes. The one on m2 is restarted behind Ployz's back, then the one
        // on m1 stopped: each proxy holds the leaving one (it is all the Service has) while the restarted one is
        // starting, and acks only once it passed health. Without the hold, every proxy would have nothing to send
        // requests to until then.
        const hold = "hold.pf.test";
        const holdPath = join(lab.dir, "hd.yaml");
        const start = "echo x >> /tmp/starts; if [ $$(wc -l < /tmp/starts) -eq 1 ]; then : > /tmp/ready; " +
          "else rm -f /tmp/ready; fi; echo hd > /www/index.html && exec httpd -f -p 80 -h /www";
        await Deno.writeTextFile(
          holdPath,
          [
            "name: hd",
            "services:",
            "  api:",
            `    image: ${IMAGE}`,
            `    command: ["sh", "-c", ${JSON.stringify(start)}]`,
            "    deploy: {replicas: 2}",
            "    stop_grace_period: 1s",
            '    x-machines: ["m1", "m2"]',
            `    x-ports: ["${hold}:80/http"]`,
            "    healthcheck:",
            '      test: ["CMD", "sh", "-c", "[ -e /tmp/ready ] && wget -q -O- http://127.0.0.1/"]',
            "      interval: 1s",
            "      timeout: 5s",
            "      retries: 3",
            "      start_period: 60s",
            "",
          ].join("\n"),
        );
        const deployed = await lab.on("m1", ["deploy", "-f", holdPath, "-y", "--monitor", "1s"]);
        assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
        const onM2 = (await lab.docker("m2", [
          "ps",
          "--format",
          "{{.Names}}",
          "--filter",
          "label=ployz.project=hd",
        ])).stdout.trim();
        assert.match(onM2, /^hd-api-\d-/);
        const logs = (): Promise<string[]> =>
          Promise.all(["m1", "m2", "m3"].map((m) => Deno.readTextFile(join(lab.dir, m, "ployzd.log"))));
        const holding = async (): Promise<number> =>
          (await logs()).filter((text) => /serving: holding "hd-api-\d-\w+" of "hd\/api"/.test(text)).length;
        // The restart itself cuts what was in flight to that replica (Ployz was not asked): the load starts after
        // it, once its row (running, health starting) has reached every Machine.
        const restarted = await lab.docker("m2", ["restart", "-t", "1", onM2]);
        assert.equal(restarted.code, 0, restarted.stderr);
        await sleep(1_500);
        const loads = labLoad(lab.dir, ["m1", "m2", "m3"], hold);
        let figures: LoadFigures[] = [];
        let stopped: { code: number; stdout: string; stderr: string } | undefined;
        let held = 0;
        try {
          await sleep(1_000);
          const stopping = lab.on("m1", ["stop", "hd/api", "--machine", "m1"]);
          // Every Machine holds the leaving replica as soon as it sees it marked (the CLI may take seconds to get
          // there on a busy host); then the restarted one becomes ready, well within the hold's 8 s bound.
          const until = Date.now() + 30_000;
          while ((held = await holding()) < 3 && Date.now() < until) await sleep(100);
          const ready = await lab.docker("m2", ["exec", onM2, "sh", "-c", ": > /tmp/ready"]);
          assert.equal(ready.code, 0, ready.stderr);
          stopped = await stopping;
          await sleep(1_000);
        } finally {
          figures = await loads.stop({ served: 10 });
        }
        assert.equal(stopped.code, 0, stopped.stderr + stopped.stdout);
        console.log(stopped.stdout.trim());
        const acked = /left every proxy first \(3 Machines acked in (\d+) ms\)/.exec(stopped.stdout);
        assert.ok(acked, stopped.stdout);
        console.log(`held on ${held} of 3 Machines; acked in ${acked[1]} ms`);
        assert.equal(
          held,
          3,
          "every Machine held the leaving replica while the other started:\n" +
            (await logs()).map((text, i) =>
              text.split("\n").filter((l) => l.includes('"hd/api"')).map((l) => `m${i + 1}: ${l}`).join("\n")
            ).join("\n"),
        );
        assertNoFailure("stop while the other replica restarts", figures);
        const removed = await lab.on("m1", ["rm", "hd", "-y"]);
        assert.equal(removed.code, 0, removed.stderr + removed.stdout);
      },
    );

    await t.step("scale 3→1 under load fails nothing; each removed replica left first", async () => {
      const { result: r, figures } = await underLoad(
        lab,
        1_000,
        2_000,
        () => lab.on("m1", ["scale", "pf/api=1", "-y", "--json"]),
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assertNoFailure("scale 3→1", figures);
      const outcome = outcomeOf(r);
      const left = outcome.left as { acked: string[]; missing: string[] }[];
      assert.equal(left.length, 2, JSON.stringify(outcome));
      const total = (await Promise.all(["m1", "m2", "m3"].map(running))).flat();
      assert.equal(total.length, 1, total.join(","));
    });
  },
}));
