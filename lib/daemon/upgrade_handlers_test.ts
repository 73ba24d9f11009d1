// The interlock through the real RPC app and lib/installer's real records and lock, in a temp layout (no
// systemd: the attempt under test is a local `process` attempt holding the install lock). The mutation handler
// is a stand-in that waits, so a mutation can be held in flight.
import { equal, match, rejects } from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_INSTALL_PATHS, type InstallPaths } from "../installer/mod.ts";
import { connectMachine, createRpcApp, type MachineClient, RpcError, type RpcHandlers } from "../rpc/mod.ts";
import { MutationGate } from "./mutation_gate.ts";
import { guardMutations, upgradeHandlers, type UpgradeHost } from "./upgrade_handlers.ts";

interface Rig extends AsyncDisposable {
  client: MachineClient;
  paths: InstallPaths;
  /** Releases the mutation currently waiting. */
  finishMutation(): void;
  /** Resolves once a mutation handler runs. */
  mutationStarted(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const root = await Deno.makeTempDir({ prefix: "ployz-upgrade-handlers-" });
  const paths: InstallPaths = {
    ...DEFAULT_INSTALL_PATHS,
    prefix: join(root, "prefix"),
    layout: { ...DEFAULT_INSTALL_PATHS.layout, dataDir: join(root, "data"), runDir: join(root, "run") },
  };
  let release = (): void => {};
  let started = Promise.withResolvers<void>();
  const inner: RpcHandlers = {
    removeContainer: async (req) => {
      const gate = Promise.withResolvers<void>();
      release = gate.resolve;
      started.resolve();
      await gate.promise;
      return { id: req.id, removed: true };
    },
  };
  const host: UpgradeHost = { paths, gate: new MutationGate(), machineName: () => "m1" };
  const handlers = { ...guardMutations(inner, host), ...upgradeHandlers(host) };
  const app = createRpcApp(handlers);
  const client = connectMachine({ fetch: async (r) => await app.fetch(r) });
  return {
    client,
    paths,
    finishMutation: () => release(),
    mutationStarted: async () => {
      await started.promise;
      started = Promise.withResolvers<void>();
    },
    async [Symbol.asyncDispose]() {
      client.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

async function refused(call: Promise<unknown>, code: string): Promise<RpcError> {
  let caught: unknown;
  await rejects(call, (error) => {
    caught = error;
    return error instanceof RpcError && error.code === code;
  });
  return caught as RpcError;
}

Deno.test("an upgrade is refused busy while a mutation is in flight", async () => {
  await using r = await rig();
  const mutation = r.client.removeContainer({ id: "abc" });
  await r.mutationStarted();
  const error = await refused(r.client.upgradeMachine({ version: "0.2.0", "request_key": "k1" }), "busy");
  match(
    error.message,
    /^Cannot upgrade Machine "m1": 1 mutation\(s\) in flight \(ployz\.container\.remove\.v1\)/,
  );
  equal(error.details.capability, "ployz.machine.upgrade.v1");
  r.finishMutation();
  await mutation;
  // With nothing in flight the request reaches the installer, which finds nothing installed here.
  const after = await refused(r.client.upgradeMachine({ version: "0.2.0", "request_key": "k1" }), "conflict");
  match(after.message, /Ployz is not installed under/);
});

Deno.test("a mutation is refused busy, naming the attempt, while an upgrade attempt runs", async () => {
  await using r = await rig();
  const id = "0abc123def";
  const attempts = join(r.paths.layout.dataDir, "install", "attempts");
  await Deno.mkdir(attempts, { recursive: true });
  const now = new Date().toISOString();
  await Deno.writeTextFile(
    join(attempts, `${id}.json`),
    JSON.stringify({
      id,
      "request_key": "k",
      "target_version": "0.2.0",
      source: "/releases",
      stage: "restart",
      "started_at": now,
      "updated_at": now,
      "journal_hint": "the output of the command",
      worker: "process",
    }),
  );
  // The attempt's worker is alive: it holds the install lock and named itself in it.
  await Deno.mkdir(r.paths.layout.runDir, { recursive: true });
  const lock = await Deno.open(join(r.paths.layout.runDir, "install.lock"), {
    read: true,
    write: true,
    create: true,
  });
  try {
    await lock.lock(true);
    await lock.write(new TextEncoder().encode(JSON.stringify({ "attempt_id": id }) + "\n"));
    const error = await refused(r.client.removeContainer({ id: "abc" }), "busy");
    equal(error.details.attempt_id, id);
    equal(error.details.stage, "restart");
    equal(error.details.capability, "ployz.container.remove.v1");
    match(error.message, /upgrade attempt "0abc123def" to 0\.2\.0 is running \(stage "restart"\)/);
    const status = await r.client.upgradeStatus({ id });
    equal(status.attempt.outcome, undefined);
  } finally {
    await lock.unlock();
    lock.close();
  }
  // The worker is gone without a result: the attempt reads interrupted and mutations go through again.
  const mutation = r.client.removeContainer({ id: "abc" });
  await r.mutationStarted();
  r.finishMutation();
  await mutation;
  equal((await r.client.upgradeStatus({ id })).attempt.outcome, "interrupted");
});

Deno.test("mutations are refused while an upgrade is being admitted", async () => {
  const gate = new MutationGate();
  const admitted = Promise.withResolvers<void>();
  const admission = gate.admitUpgrade("m1", () => admitted.promise);
  let caught: unknown;
  try {
    gate.enter("ployz.container.ensure.v1", "m1");
  } catch (error) {
    caught = error;
  }
  equal((caught as RpcError).code, "busy");
  equal((caught as RpcError).details.upgrade_admission, true);
  admitted.resolve();
  await admission;
  const leave = gate.enter("ployz.container.ensure.v1", "m1");
  equal(gate.active().length, 1);
  leave();
  equal(gate.active().length, 0);
});

Deno.test("upgrade requests are strict and status ids are checked", async () => {
  await using r = await rig();
  const both = await refused(
    r.client.upgradeMachine({ version: "0.2.0", channel: "stable", "request_key": "k" }),
    "invalid_argument",
  );
  match(both.message, /field "channel": give a version or a channel, not both/);
  const id = await refused(r.client.upgradeStatus({ id: "../etc" }), "invalid_argument");
  match(id.message, /Invalid attempt id "\.\.\/etc"/);
  const missing = await refused(r.client.upgradeStatus({ id: "nosuchattempt" }), "not_found");
  equal(missing.details.capability, "ployz.machine.upgrade_status.v1");
});
