// Parallel Deploys on a real three-Machine lab: 3 Services x 3 replicas, health-gated, under --parallel 1 and
// the default (no --parallel: parallel), as a depends_on chain and as three independent Services; times printed
// beside a raw `docker run` of the same 9 containers on the three dockerds. What runs side by side is asserted from
// the order of the Deploy's events; of the times, that the chain's default is well under one at a time. A
// Service's replacements roll one at a time, or as many at once as its `update_config.parallelism`, each its
// `delay` after the one before. Then a
// Machine cut mid-Deploy under the default: the other Machines' operations finish, the cut Machine's is failed or
// unknown, and everything after is not attempted.
import assert from "node:assert/strict";
import { join } from "node:path";
import { followDeploy, lastOutcome } from "./support/daemon.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

const IMAGE = "ployz-test/busybox:1";

interface OpJson {
  kind: string;
  service: string;
  "machine_name": string;
}

interface FailureJson {
  op: OpJson;
  error: { code: string; message: string };
  "outcome_unknown"?: boolean;
}

interface OutcomeJson {
  status: string;
  completed: OpJson[];
  failed?: FailureJson;
  "also_failed"?: FailureJson[];
  "not_attempted": OpJson[];
}

/**
 * Three Services of three replicas each, a depends on nothing, b on a, c on b (`chained`, the default; else none
 * depends on another); each gated on its healthcheck, whose
 * first run takes `healthySeconds` (0: passes at once; else one try, so the wait for health stays short). The
 * checks' timeouts leave 10 s beyond what they run: on a loaded host Docker's exec alone has taken over 2 s three
 * times in a row, and a replica judged unhealthy for that stops the Deploy for a reason this test is not about. A
 * healthy container passes as fast as with a shorter timeout.
 */
function threeByThree(name: string, healthySeconds = 0, chained = true): string {
  const slow = `test: ["CMD", "sleep", "${healthySeconds}"], interval: 1s, timeout: ${healthySeconds + 10}s`;
  const check = healthySeconds === 0
    ? `test: ["CMD", "true"], interval: 1s, timeout: 10s, retries: 3`
    : `${slow}, retries: 1`;
  const svc = (s: string, dependsOn: string | undefined) =>
    `  ${s}:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy: {replicas: 3}
    healthcheck: {${check}}
    stop_signal: SIGKILL
${dependsOn === undefined ? "" : `    depends_on: [${dependsOn}]\n`}`;
  const after = (s: string) => chained ? s : undefined;
  return `name: ${name}\nservices:\n${svc("a", undefined)}${svc("b", after("a"))}${svc("c", after("b"))}`;
}

const at = (op: OpJson): string => `${op.kind} ${op.service}@${op.machine_name}`;

/** Where in a Deploy's events each create reached a phase (or `completed`), as positions in its transcript. */
interface CreateOrder {
  /** Position of the first event of a create of `service` (on `machine`, when given) in `phase`; throws if none. */
  first(phase: string, service: string, machine?: string): number;
  /** Position of the last such event; throws if none. */
  last(phase: string, service: string): number;
  /** The creates' events, one per line, for a failure message. */
  text: string;
}

/** A timed Deploy: its wall time and the order of its creates' events. */
interface Timed {
  ms: number;
  order: CreateOrder;
}

/** The {@link CreateOrder} of a `deploy --json` transcript. */
function createOrder(ndjson: string): CreateOrder {
  let ops: OpJson[] = [];
  const events: { phase: string; op: OpJson }[] = [];
  for (const line of ndjson.trim().split("\n")) {
    const e = JSON.parse(line);
    if (e.type === "plan") ops = e.ops;
    const op = ops[e.index];
    if (e.type !== "step" || op?.kind !== "create") continue;
    events.push({ phase: e.status === "running" ? e.phase : e.status, op });
  }
  const matches = (phase: string, service: string, machine?: string) => (e: { phase: string; op: OpJson }) =>
    e.phase === phase && e.op.service === service && (machine === undefined || e.op.machine_name === machine);
  const text = events.map((e) => `${e.phase} ${at(e.op)}`).join("\n");
  const found = (position: number, what: string): number => {
    if (position < 0) throw new Error(`No event ${what} among the creates' events:\n${text}`);
    return position;
  };
  return {
    first: (phase, service, machine) =>
      found(events.findIndex(matches(phase, service, machine)), `${phase} ${service}@${machine ?? "any"}`),
    last: (phase, service) => found(events.findLastIndex(matches(phase, service)), `${phase} ${service}`),
    text,
  };
}

/**
 * How many operations of `kind` a `deploy --json` transcript ran (`replaced`), and the most of them in flight
 * at once (`peak`): running from their first step event until completed or failed.
 */
function inFlight(ndjson: string, kind: string): { peak: number; replaced: number } {
  let ops: OpJson[] = [];
  const running = new Set<number>();
  const seen = new Set<number>();
  let peak = 0;
  for (const line of ndjson.trim().split("\n")) {
    const e = JSON.parse(line);
    if (e.type === "plan") ops = e.ops;
    if (e.type !== "step" || ops[e.index]?.kind !== kind) continue;
    seen.add(e.index);
    if (e.status === "running") running.add(e.index);
    else running.delete(e.index);
    peak = Math.max(peak, running.size);
  }
  return { peak, replaced: seen.size };
}

Deno.test(needs(["lab"], {
  name:
    "parallel Deploy on a 3-Machine lab: 3x3 faster than one at a time; a cut Machine stops only its chain",
  async fn(t) {
    await using lab = await startLab("pd", 3);
    await machinesUp(lab, "m1", 3);
    /**
     * Deploys a 3x3 Project with `--parallel N` (no --parallel, the default, when unset), timed, then removes it;
     * answers the time and the order its creates went through their phases.
     */
    const deployTimed = async (
      name: string,
      parallel?: number,
      chained = true,
      flags: string[] = [],
    ): Promise<Timed> => {
      const path = join(lab.dir, `${name}.yaml`);
      await Deno.writeTextFile(path, threeByThree(name, 0, chained));
      const bound = [...flags, ...parallel === undefined ? [] : ["--parallel", String(parallel)]];
      const started = performance.now();
      const r = await lab.on("m1", ["deploy", "-f", path, "-y", "--json", ...bound]);
      const ms = performance.now() - started;
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const outcome = lastOutcome<OutcomeJson>(r.stdout);
      assert.equal(outcome.status, "succeeded");
      assert.equal(outcome.completed.filter((op) => op.kind === "create").length, 9);
      // Each figure is taken on an empty lab: nine containers left behind probing their health every second
      // would slow whatever is measured after them.
      const removed = await lab.on("m1", ["rm", name, "-y"]);
      assert.equal(removed.code, 0, removed.stderr + removed.stdout);
      return { ms, order: createOrder(r.stdout) };
    };

    await t.step(
      "3 Services x 3 replicas: the default (parallel) against --parallel 1 and raw docker run",
      async () => {
        const { ms: sequential } = await deployTimed("seq", 1);
        const { ms: parallel, order: chain } = await deployTimed("par");
        // With --parallel 1 the independent Services run the same operations in the same order as the chain, one
        // at a time, each create through its health check and monitor period: `sequential` is their time too.
        const { ms: independent, order: side } = await deployTimed("ind", undefined, false);
        // Gated on health alone (no monitor period): what the raw containers below wait for, all healthy.
        const { ms: healthOnly } = await deployTimed("hon", undefined, false, ["--monitor", "0s"]);
        const started = performance.now();
        const runs = ["m1", "m2", "m3"].flatMap((m) =>
          [1, 2, 3].map((i) =>
            lab.docker(m, [
              "run",
              "-d",
              "--name",
              `raw-${m}-${i}`,
              "--health-cmd",
              "true",
              "--health-interval",
              "1s",
              IMAGE,
              "sleep",
              "3600",
            ])
          )
        );
        for (const r of await Promise.all(runs)) assert.equal(r.code, 0, r.stderr);
        const raw = performance.now() - started;
        // The same 9 once Docker reports every one healthy: what a health-gated Deploy waits for at the least (it
        // also holds each container through its monitor period, 5 s by default).
        await eventually(60_000, "the 9 raw containers healthy", async () => {
          const states = await Promise.all(["m1", "m2", "m3"].map((m) =>
            lab.docker(m, [
              "inspect",
              "-f",
              "{{.State.Health.Status}}",
              ...[1, 2, 3].map((i) => `raw-${m}-${i}`),
            ])
          ));
          return states.every((r) =>
            r.code === 0 && r.stdout.trim().split("\n").every((s) => s === "healthy")
          ) ||
            undefined;
        }, 100);
        const rawHealthy = performance.now() - started;
        console.log(
          `3x3 across 3 Machines: --parallel 1 ${(sequential / 1000).toFixed(1)} s, default ${
            (parallel / 1000).toFixed(1)
          } s (${(parallel / sequential).toFixed(2)}x); raw docker run of 9 in parallel ${
            (raw / 1000).toFixed(1)
          } s ` +
            `(parallel Deploy ${
              (parallel / raw).toFixed(2)
            }x raw, which waits for no health); all 9 healthy ` +
            `${(rawHealthy / 1000).toFixed(1)} s (${(parallel / rawHealthy).toFixed(2)}x); ` +
            `3 independent Services x 3, default ${(independent / 1000).toFixed(1)} s (${
              (independent / sequential).toFixed(2)
            }x --parallel 1, ${(independent / raw).toFixed(2)}x raw, ${
              (independent / rawHealthy).toFixed(2)
            }x raw healthy); the same with --monitor 0s ${(healthOnly / 1000).toFixed(1)} s (${
              (healthOnly / raw).toFixed(2)
            }x raw, ${(healthOnly / rawHealthy).toFixed(2)}x raw healthy)`,
        );
        for (const m of ["m1", "m2", "m3"]) {
          await lab.docker(m, ["rm", "-f", `raw-${m}-1`, `raw-${m}-2`, `raw-${m}-3`]);
        }
        // What the default does, from the order of its events, which no host's load changes: a Service's replicas
        // on the three Machines are created side by side (each started before any finished); in the chain b's
        // creates wait until every create of a passed its healthcheck, and independent Services do not wait.
        for (const order of [chain, side]) {
          assert.ok(order.first("creating", "a", "m3") < order.first("completed", "a"), order.text);
        }
        assert.ok(chain.first("creating", "b") > chain.last("waiting_for_health", "a"), chain.text);
        assert.ok(side.first("creating", "b") < side.last("waiting_for_health", "a"), side.text);
        // The default overlaps the Machines' work: well under one at a time (3 Machines, so about a third of it
        // at best; the bound leaves room for a loaded host). The independent Services' time is printed only: under
        // other labs' load it swung above --parallel 1's (137.8 s against 97.5 s), by more than their gain.
        assert.ok(parallel < sequential * 0.8, `default ${parallel} ms, --parallel 1 ${sequential} ms`);
      },
    );

    await t.step(
      "a Service's replacements roll one at a time, or update_config.parallelism at once, or delay apart",
      async () => {
        const path = join(lab.dir, "roll.yaml");
        const write = (mark: string, update?: string) =>
          Deno.writeTextFile(
            path,
            `name: roll\nservices:\n  web:\n    image: ${IMAGE}\n    command: ["sleep", "3600"]\n` +
              `    environment: {MARK: "${mark}"}\n    deploy: {replicas: 3${
                update === undefined ? "" : `, update_config: {${update}}`
              }}\n    healthcheck: {test: ["CMD", "true"], interval: 1s, timeout: 10s, retries: 3}\n` +
              "    stop_signal: SIGKILL\n",
          );
        const deploy = async (): Promise<{ ms: number; peak: number; replaced: number }> => {
          const started = performance.now();
          const r = await lab.on("m1", ["deploy", "-f", path, "-y", "--json", "--monitor", "1s"]);
          const ms = performance.now() - started;
          assert.equal(r.code, 0, r.stderr + r.stdout);
          assert.equal(lastOutcome<OutcomeJson>(r.stdout).status, "succeeded");
          return { ms, ...inFlight(r.stdout, "replace") };
        };
        await write("a");
        await deploy();
        await write("b");
        const rolling = await deploy();
        await write("c", "parallelism: 3");
        const together = await deploy();
        // Which replacements overlapped, from the order of the Deploy's events, which no host's load changes.
        assert.deepEqual([rolling.replaced, rolling.peak], [3, 1], "by default one replacement at a time");
        assert.deepEqual([together.replaced, together.peak], [3, 3], "parallelism 3: the three at once");
        // With a delay, each replacement starts that long after the one before it ended (the events' arrival
        // times: a late event only makes a gap look shorter, so 1.8 s of 2 s).
        await write("d", "delay: 2s");
        const started = new Map<number, number>();
        const ended = new Map<number, number>();
        let ops: OpJson[] = [];
        const delayed = await followDeploy(
          { compose: path, flags: ["--monitor", "1s"], env: lab.envOn("m1") },
          (event) => {
            if (event.type === "plan") ops = event.ops;
            if (event.type !== "step" || ops[event.index]?.kind !== "replace") return;
            if (event.status === "running" && !started.has(event.index)) {
              started.set(event.index, performance.now());
            }
            if (event.status === "completed") ended.set(event.index, performance.now());
          },
        );
        assert.equal(delayed.code, 0, delayed.stderr + delayed.transcript);
        const order = [...started.keys()].sort((x, y) => x - y);
        assert.equal(order.length, 3, delayed.transcript);
        const gaps = order.slice(1).map((index, i) => started.get(index)! - ended.get(order[i])!);
        assert.ok(gaps.every((gap) => gap >= 1800), `gaps between replacements: ${gaps.join(", ")} ms`);
        console.log(
          `1 Service x 3 replaced across 3 Machines (health-gated, --monitor 1s): one at a time ${
            (rolling.ms / 1000).toFixed(1)
          } s, update_config.parallelism 3 ${(together.ms / 1000).toFixed(1)} s (${
            (together.ms / rolling.ms).toFixed(2)
          }x); with delay: 2s, gaps of ${gaps.map((gap) => (gap / 1000).toFixed(1)).join(" and ")} s`,
        );
        const removed = await lab.on("m1", ["rm", "roll", "-y"]);
        assert.equal(removed.code, 0, removed.stderr + removed.stdout);
      },
    );

    await t.step("a Machine cut mid-Deploy under the default parallel execution", async () => {
      const path = join(lab.dir, "cutp.yaml");
      // a's health takes 8 s, so the partition (a `ployz lab` process of its own) lands while m3's replica waits
      // for it, however loaded the host.
      await Deno.writeTextFile(path, threeByThree("cutp", 8));
      let plan: OpJson[] = [];
      let cut = false;
      const run = await followDeploy(
        { compose: path, flags: ["--monitor", "3s", "--call-timeout", "15s"], env: lab.envOn("m1") },
        async (event) => {
          if (event.type === "plan") plan = event.ops;
          // While m3's replica of a waits for its health, m3 drops off the mesh.
          if (
            !cut && event.type === "step" && event.status === "running" &&
            event.phase === "waiting_for_health" &&
            plan[event.index]?.machine_name === "m3"
          ) {
            cut = true;
            const r = await lab.lab(["partition", "m1,m2", "/", "m3"]);
            assert.equal(r.code, 0, r.stderr);
          }
        },
      );
      assert.equal(run.code, 1, `a partial Deploy exits 1: ${run.stderr}`);
      const outcome = lastOutcome<OutcomeJson>(run.transcript);
      const failures = [outcome.failed, ...(outcome.also_failed ?? [])].map((f) =>
        f === undefined
          ? "none"
          : `${at(f.op)}${f.outcome_unknown ? " (unknown)" : ""}: ${f.error.code}: ${f.error.message}`
      );
      const seen = `completed: ${outcome.completed.map(at).join(", ")}; failed: ${failures.join("; ")}`;
      assert.ok(cut, `the partition was made while m3's operation ran; ${seen}`);
      assert.equal(
        outcome.status,
        "partial",
        `completed: ${outcome.completed.map(at).join(", ")}; failed: ${failures.join("; ")}`,
      );
      assert.deepEqual(outcome.completed.map(at).sort(), ["create a@m1", "create a@m2"]);
      assert.equal(outcome.failed?.op.machine_name, "m3");
      assert.equal(outcome.also_failed, undefined, failures.join("; "));
      console.log(
        `cut under --parallel: m3's operation ${
          outcome.failed?.outcome_unknown ? "has an unknown outcome" : "failed"
        }: ${outcome.failed?.error.code}: ${outcome.failed?.error.message}`,
      );
      // Everything else, b's and c's replicas and every Serving Pointer move included, was never attempted.
      assert.equal(outcome.not_attempted.length, plan.length - 3, outcome.not_attempted.map(at).join(", "));
      assert.deepEqual(
        outcome.not_attempted.filter((op) => op.kind === "create").map(at).sort(),
        ["b", "c"].flatMap((s) => ["m1", "m2", "m3"].map((m) => `create ${s}@${m}`)).sort(),
      );
      await lab.lab(["heal"]).then((r) => assert.equal(r.code, 0, r.stderr));
    });
  },
}));
