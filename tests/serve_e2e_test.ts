// `ployzd serve` end to end: the real daemon under its relocated `serve` permission set, the real dockerd, the
// real SQLite store file, and Machine RPC through lib/rpc's client and through `ployzd dial-stdio`.
import { deepEqual, equal, match, notEqual, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import Docker from "dockerode";
import { CAPABILITIES, connectMachine, type MachineClient, RpcError } from "../lib/rpc/mod.ts";
import { type MachineEnv, machineEnv, type Serving, spawnProgram, startServe } from "./support/daemon.ts";
import { DOCKER_SOCKET, IMAGE, removeByLabel } from "./support/docker.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

const RUN = crypto.randomUUID().slice(0, 8);
const NETWORK = `ployz-e2e-${RUN}`;
const OCTET = 1 + Math.floor(Math.random() * 254);
const SUBNET = `10.211.${OCTET}.0/24`;

async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

async function refused(call: Promise<unknown>, code: string): Promise<RpcError> {
  let caught: unknown;
  await rejects(call, (error) => {
    caught = error;
    return true;
  });
  ok(caught instanceof RpcError, `expected an RpcError, got ${caught}`);
  equal(caught.code, code, caught.message);
  return caught;
}

/**
 * The newest change to one container row in the store's change log, read-only while the daemon holds the file
 * open. The log is the store's truth and its columns are the replication format, so they stay put.
 */
function storeRow(dataDir: string, id: string): { deleted: number; body: string | null } | undefined {
  const db = new DatabaseSync(join(dataDir, "store.db"), { readOnly: true });
  try {
    const row = db.prepare(
      "SELECT deleted, body FROM changes WHERE tbl = 'containers' AND key = ? ORDER BY hlc DESC LIMIT 1",
    ).get(id);
    return row === undefined ? undefined : { deleted: Number(row.deleted), body: row.body as string | null };
  } finally {
    db.close();
  }
}

function storeText(dataDir: string): string {
  const db = new DatabaseSync(join(dataDir, "store.db"), { readOnly: true });
  try {
    return db.prepare("SELECT body FROM changes").all().map((r) => String(r.body)).join("\n");
  } finally {
    db.close();
  }
}

/** Reads one HTTP/1.1 answer with a Content-Length body, and stops reading there. */
async function readAnswer(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let received = "";
  try {
    for (;;) {
      const at = received.indexOf("\r\n\r\n");
      if (at >= 0) {
        const length = Number(/content-length:\s*(\d+)/i.exec(received.slice(0, at))?.[1] ?? NaN);
        ok(Number.isInteger(length), `a sized answer, not a chunked one: ${received.slice(0, at)}`);
        if (new TextEncoder().encode(received.slice(at + 4)).length >= length) return received;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error(`The answer ended early: ${received}`);
      received += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel();
  }
}

/** One HTTP/1.1 exchange written to `ployzd dial-stdio`'s stdin and read from its stdout. */
async function viaDialStdio(env: MachineEnv, capability: string, body: unknown): Promise<[number, unknown]> {
  const child = spawnProgram(env, "ployzd", "dial-stdio", ["dial-stdio"], "piped");
  const stderr = text(child.stderr);
  try {
    const payload = new TextEncoder().encode(JSON.stringify(body));
    const head = `POST /rpc/${capability} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${payload.length}\r\nConnection: close\r\n\r\n`;
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(head));
    await writer.write(payload);
    // Keep stdin open until the answer is in: the daemon answers before the caller half-closes.
    const reply = await readAnswer(child.stdout);
    await writer.close();
    const status = await child.status;
    equal(status.code, 0, await stderr);
    const [header, rest] = reply.split("\r\n\r\n", 2);
    const code = Number(header.split(" ")[1]);
    return [code, JSON.parse(rest)];
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Exited.
    }
    await child.status;
    await stderr;
  }
}

Deno.test(needs(["docker"], {
  name: "ployzd serve answers Machine RPC over its socket, owns only its containers and publishes them",
  async fn(t) {
    const root = await Deno.makeTempDir({ prefix: "ployz-serve-" });
    const env = await machineEnv(root, {
      dockerSocket: DOCKER_SOCKET,
      dockerRoot: join(root, "docker"),
      network: NETWORK,
      run: RUN,
    });
    const layout = env.layout;
    const socketPath = join(layout.runDir, "ployz.sock");
    const raw = new Docker({ socketPath: DOCKER_SOCKET });
    let serving: Serving | undefined = await startServe(env, { rescanSeconds: 3 });
    let client: MachineClient = connectMachine({ socketPath });
    try {
      const contract = await client.describeContract();
      let machineName = contract.machine_name;
      const machineId = contract.machine_id;

      await t.step("describe_contract lists the catalog and the socket is 0660", async () => {
        match(machineId, /^[a-z2-7]{26}$/);
        deepEqual([...contract.capabilities].sort(), Object.values(CAPABILITIES).sort());
        equal(contract.protocol_major, 1);
        equal((await Deno.stat(socketPath)).mode! & 0o777, 0o660);
        const key = await Deno.stat(join(layout.dataDir, "keys", "wg.key"));
        equal(key.mode! & 0o777, 0o600);
      });

      await t.step("status before init: uninitialized, Docker reachable", async () => {
        const status = await client.status();
        equal(status.machine.phase, "uninitialized");
        equal(status.machine.id, machineId);
        equal(status.docker.reachable, true);
        match(status.machine.public_key ?? "", /^[A-Za-z0-9+/]{43}=$/);
        const spec = { name: `ployz-e2e-${RUN}-early`, creationKey: `ck-early-${RUN}`, image: IMAGE };
        const error = await refused(
          client.ensureContainer({
            spec: { ...spec, project: "p", service: "s", deployment: "d", slot: "0" },
            start: false,
          }),
          "conflict",
        );
        match(error.message, /not initialized/);
        equal(error.details.capability, CAPABILITIES.ensureContainer);
      });

      let clusterId = "";
      await t.step("init founds a Cluster once; a different one is a conflict", async () => {
        const first = await client.init({ cluster_name: "e2e", subnet: SUBNET });
        equal(first.machine.phase, "participating");
        equal(first.machine.subnet, SUBNET);
        clusterId = first.machine.cluster_id ?? "";
        match(clusterId, /^[a-z2-7]{26}$/);
        const again = await client.init({ cluster_name: "e2e", subnet: SUBNET });
        equal(again.machine.cluster_id, clusterId);
        const other = await refused(client.init({ cluster_name: "other" }), "conflict");
        equal(other.details.capability, CAPABILITIES.init);
        const network = await raw.getNetwork(NETWORK).inspect();
        equal(network.Labels["ployz.managed"], "1");
        equal(network.Labels["ployz.machine"], machineId);
        equal(network.IPAM.Config[0].Subnet, SUBNET);
      });

      await t.step("a restart keeps the identity and reopens the store", async () => {
        const stopped = await serving!.stop();
        serving = undefined;
        equal(stopped.code, 0, stopped.stderr);
        match(
          stopped.stderr,
          new RegExp(`Machine "${machineName}" \\(${machineId}, uninitialized\\) listening`),
        );
        await rejects(Deno.stat(socketPath), Deno.errors.NotFound);
        client.close();
        serving = await startServe(env, { rescanSeconds: 3 });
        client = connectMachine({ socketPath });
        const status = await client.status();
        equal(status.machine.phase, "participating");
        equal(status.machine.cluster_id, clusterId);
        equal(status.machine.id, machineId);
        machineName = status.machine.name;
      });

      const spec = {
        name: `ployz-e2e-${RUN}-web`,
        creationKey: `ck-web-${RUN}`,
        project: "shop",
        service: "web",
        deployment: `dep-${RUN}`,
        slot: "0",
        image: IMAGE,
        cmd: ["sh", "-c", "echo hello-out; echo hello-err >&2; exec httpd -f -p 80 -h /www"],
        env: { SECRET_TOKEN: "hunter2-value" },
        network: { name: NETWORK, aliases: ["web"] },
        stopGraceSeconds: 1,
      };
      let id = "";
      await t.step("ensure creates and starts; a retry with the same creation key finds it", async () => {
        const made = await client.ensureContainer({ spec, start: true });
        equal(made.created, true);
        equal(made.started, true);
        equal(made.container.state, "running");
        equal(made.container.creation_key, spec.creationKey);
        match(made.container.addresses[0] ?? "", new RegExp(`^10\\.211\\.${OCTET}\\.`));
        id = made.container.id;
        const retry = await client.ensureContainer({ spec, start: true });
        equal(retry.container.id, id);
        equal(retry.created, false);
        equal(retry.started, false);
        const named = await raw.listContainers({ all: true, filters: { name: [spec.name] } });
        equal(named.length, 1);
      });

      await t.step(
        "list shows it with environment names only; the store row appears without values",
        async () => {
          const list = await client.listContainers({ project: "shop" });
          equal(list.machine_id, machineId);
          const found = list.containers.find((c) => c.id === id);
          ok(found);
          deepEqual(found.env_names.filter((n) => n === "SECRET_TOKEN"), ["SECRET_TOKEN"]);
          ok(!JSON.stringify(list).includes("hunter2"), "an environment value left the Machine");
          const row = await eventually(30_000, "the container row", () => {
            const r = storeRow(layout.dataDir, id);
            return r !== undefined && r.deleted === 0 && r.body?.includes('"running"') ? r : undefined;
          }, 200);
          const body = JSON.parse(row.body!);
          equal(body.machine_id, machineId);
          equal(body.service, "web");
          ok(body.env_names.includes("SECRET_TOKEN"));
          ok(!storeText(layout.dataDir).includes("hunter2"), "an environment value reached the store");
        },
      );

      await t.step("wait_healthy and image inspect", async () => {
        const health = await client.waitHealthy({ id, deadline_ms: 20_000, monitor_ms: 500 });
        equal(health.passed, true, JSON.stringify(health));
        equal(health.evidence.state, "running");
        const image = await client.inspectImage({ ref: IMAGE });
        equal(image.present, true);
        match(image.id ?? "", /^sha256:/);
        deepEqual(await client.inspectImage({ ref: "ployz-test/absent:0" }), { present: false });
      });

      await t.step("admission refuses a missing image before creating anything", async () => {
        const missing = {
          ...spec,
          name: `${spec.name}-x`,
          creationKey: `${spec.creationKey}-x`,
          image: "ployz-test/absent:0",
        };
        const error = await refused(client.ensureContainer({ spec: missing, start: false }), "not_found");
        equal(error.message, `Image "ployz-test/absent:0" is present nowhere on Machine "${machineName}"`);
        equal((await raw.listContainers({ all: true, filters: { name: [missing.name] } })).length, 0);
      });

      await t.step("a container Ployz does not own is refused and left untouched", async () => {
        const name = `ployz-e2e-${RUN}-hand`;
        const hand = await raw.createContainer({
          name,
          Image: IMAGE,
          Cmd: ["sleep", "300"],
          Labels: { "ployz.test": RUN },
        });
        const before = await hand.inspect();
        const error = await refused(
          client.ensureContainer({ spec: { ...spec, name, creationKey: `ck-hand-${RUN}` }, start: true }),
          "conflict",
        );
        match(error.message, /does not own/);
        await refused(client.startContainer({ id: name }), "conflict");
        await refused(client.removeContainer({ id: name }), "conflict");
        const after = await hand.inspect();
        equal(after.Id, before.Id);
        equal(after.State.Status, "created");
        deepEqual(after.Config.Labels, { "ployz.test": RUN });
      });

      await t.step("stop and remove; the row becomes a tombstone", async () => {
        const stopped = await client.stopContainer({ id, grace_seconds: 1 });
        equal(stopped.container.state, "exited");
        const absent = `ployz-e2e-${RUN}-never`;
        deepEqual(await client.removeContainer({ id: absent }), { id: absent, removed: false });
        deepEqual(await client.removeContainer({ id }), { id, removed: true });
        deepEqual(await client.removeContainer({ id }), { id, removed: false });
        await eventually(
          30_000,
          "the deleted row",
          () => storeRow(layout.dataDir, id)?.deleted === 1 ? true : undefined,
          200,
        );
      });

      await t.step(
        "refusals: unknown capability, another major, a mistyped field; unknown fields ignored",
        async () => {
          const post = (capability: string, body: unknown): Promise<Response> => {
            using http = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
            return fetch(`http://localhost/rpc/${capability}`, {
              method: "POST",
              body: JSON.stringify(body),
              client: http,
            });
          };
          let response = await post("ployz.machine.teleport.v1", { protocol_major: 1 });
          equal(response.status, 404);
          deepEqual((await response.json()).error.details, { capability: "ployz.machine.teleport.v1" });
          // A retired route is no longer advertised and is refused, naming it and what replaced it.
          response = await post("ployz.container.logs.v1", { protocol_major: 1, id: "x" });
          equal(response.status, 404);
          const retired = (await response.json()).error;
          match(
            retired.message,
            /"ployz\.container\.logs\.v1" was retired; use ployz\.observe\.log_history\.v1/,
          );
          deepEqual(retired.details, { capability: "ployz.container.logs.v1" });
          ok(!contract.capabilities.includes("ployz.container.logs.v1"));
          response = await post(CAPABILITIES.status, { protocol_major: 2 });
          let error = (await response.json()).error;
          equal(error.code, "unsupported");
          deepEqual(error.details, { capability: CAPABILITIES.status, protocol_major: 1 });
          // A field this daemon does not know is ignored (a newer client's optional addition); a known field of
          // the wrong type is refused, naming it.
          response = await post(CAPABILITIES.listContainers, {
            protocol_major: 1,
            project: "shop",
            projct: "x",
          });
          equal(response.status, 200);
          deepEqual(
            (await response.json()).containers.map((c: { id: string }) => c.id),
            (await client.listContainers({ project: "shop" })).containers.map((c) => c.id),
          );
          response = await post(CAPABILITIES.listContainers, { protocol_major: 1, project: ["shop"] });
          error = (await response.json()).error;
          equal(error.code, "invalid_argument");
          equal(error.details.field, "project");
          match(error.message, /"project"/);
          const missing = await refused(client.requireCapability("ployz.machine.teleport.v1"), "unsupported");
          equal(
            missing.message,
            `Machine "${machineName}" does not serve "ployz.machine.teleport.v1": upgrade its daemon`,
          );
          equal(missing.details.capability, "ployz.machine.teleport.v1");
          await client.requireCapability(CAPABILITIES.ensureContainer);
        },
      );

      await t.step("dial-stdio carries a request to the daemon and its answer back", async () => {
        const [status, body] = await viaDialStdio(env, CAPABILITIES.describeContract, {
          protocol_major: 1,
        });
        equal(status, 200);
        equal((body as { machine_id: string }).machine_id, machineId);
        const [refusedStatus, refusal] = await viaDialStdio(env, CAPABILITIES.status, {
          protocol_major: 7,
        });
        notEqual(refusedStatus, 200);
        equal((refusal as { error: { code: string } }).error.code, "unsupported");
      });
    } finally {
      client.close();
      if (serving !== undefined) {
        const stopped = await serving.stop();
        equal(stopped.code, 0, stopped.stderr);
        ok(!stopped.stderr.includes("hunter2"), "an environment value reached the daemon's log");
      }
      await removeByLabel(raw, `ployz.test=${RUN}`);
      await Deno.remove(root, { recursive: true });
    }
  },
}));
