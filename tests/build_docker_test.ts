// Builds through Machine RPC against the real dockerd: the operator's side packs a context and sends it over the
// build routes (an in-process RPC app serving the daemon's build handlers), Docker's engine build API builds it, and
// every failure names the Service and the stage with the output's tail.
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildHandlers } from "../lib/daemon/mod.ts";
import type { NormalizedProject, NormalizedService } from "../lib/deploy/mod.ts";
import { buildOf } from "../lib/deploy/testing/mod.ts";
import {
  type Builder,
  type BuildEvent,
  OperatorError,
  prepareBuilds,
  runBuilds,
} from "../lib/operator/mod.ts";
import { connectMachine, createRpcApp } from "../lib/rpc/mod.ts";
import { dockerTest, IMAGE, type Scope } from "./support/docker.ts";
import { eventually } from "./support/poll.ts";

function serviceOf(
  name: string,
  context: string,
  extra: Partial<NonNullable<NormalizedService["build"]>> = {},
) {
  return {
    name,
    image: `p-${name}`,
    build: buildOf(context, extra),
  } as unknown as NormalizedService;
}

function projectOf(name: string, services: NormalizedService[]): NormalizedProject {
  return {
    name,
    context: null,
    services: Object.fromEntries(services.map((s) => [s.name, s])),
    volumes: {},
  };
}

/** A builder Machine served in-process: the daemon's build handlers behind a real RPC app, on the real dockerd. */
async function builderOf(
  s: Scope,
  record: { name: string; accepts_builds?: boolean } = { name: "m1" },
  uploadIdleMs?: number,
) {
  const dir = await Deno.makeTempDir({ prefix: "ployz-builds-" });
  const stopping = new AbortController();
  const built = new Set<string>();
  const handlers = buildHandlers({
    engine: s.engine,
    record: () => record,
    buildsDir: join(dir, "builds"),
    stopping: stopping.signal,
    log: () => {},
    pulled: { add: (id) => Promise.resolve(void built.add(id)) },
    uploadIdleMs,
  });
  const app = createRpcApp({
    ...handlers,
    inspectImage: async (req) => ({ present: await s.engine.imageExists(req.ref) }),
    describeContract: () =>
      Promise.resolve({
        "machine_id": "m1",
        "machine_name": "m1",
        "protocol_major": 1,
        "daemon_version": "test",
        capabilities: ["ployz.image.build_upload.v1", "ployz.image.build.v1", "ployz.image.inspect.v1"],
      }),
  });
  const client = connectMachine({ fetch: (r) => Promise.resolve(app.fetch(r)), label: "m1" });
  const builder: Builder = { id: "m1", name: "m1", api: client };
  return {
    builder,
    dir,
    built,
    async [Symbol.asyncDispose]() {
      stopping.abort();
      client.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function contextDir(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "ployz-ctx-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(dir, name, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, name), text);
  }
  return dir;
}

async function removeImages(s: Scope, refs: string[]): Promise<void> {
  for (const ref of refs) await s.raw.getImage(ref).remove({ force: true }).catch(() => {});
}

dockerTest(
  "a context is sent over Machine RPC and built by Docker; the same context again is up to date",
  async (s) => {
    await using m = await builderOf(s);
    const ctx = await contextDir({
      "Dockerfile": `FROM ${IMAGE}\nARG GREETING\nCOPY app.txt /app.txt\nRUN echo "$GREETING" > /greeting\n`,
      "app.txt": "one\n",
      ".dockerignore": "secret.txt\n",
      "secret.txt": "never sent\n",
    });
    const project = projectOf(`b${s.id.replace(/[^a-z0-9]/g, "")}`.slice(0, 30), [
      serviceOf("web", ctx, { args: { GREETING: "hello" }, labels: { team: "core" }, image: null }),
    ]);
    const events: BuildEvent[] = [];
    const refs: string[] = [];
    try {
      const first = await prepareBuilds(project, m.builder, (e) => events.push(e));
      const ref = first.project.services.web.image;
      refs.push(ref);
      assert.match(ref, new RegExp(`^${project.name}-web:[0-9a-f]{16}$`));
      assert.equal(first.jobs[0].upToDate, false);
      await runBuilds(first.jobs, m.builder, (e) => events.push(e));
      const types = events.map((e) => e.type);
      assert.deepEqual(types.filter((t) => t !== "log"), ["planned", "sending", "sent", "built"]);
      assert.ok(
        events.some((e) => e.type === "log" && /Step 1\/\d+ : FROM/.test(e.text)),
        "build output streamed",
      );
      const image = await s.raw.getImage(ref).inspect();
      assert.equal(image.Config.Labels.team, "core");
      assert.deepEqual([...m.built], [image.Id], "the built image is recorded as Ployz's, for image prune");
      // What the image holds: the file sent, the argument applied, the ignored file absent.
      const out = await run(s, ref, ["sh", "-c", "cat /app.txt /greeting; ls /secret.txt 2>&1 || true"]);
      assert.match(out, /^one\nhello\n/);
      assert.equal(first.jobs[0].packed, undefined, "the temporary context is removed once sent");

      const again: BuildEvent[] = [];
      const second = await prepareBuilds(project, m.builder, (e) => again.push(e));
      assert.equal(second.project.services.web.image, ref);
      assert.equal(second.jobs[0].upToDate, true);
      await runBuilds(second.jobs, m.builder, (e) => again.push(e));
      assert.deepEqual(again.map((e) => e.type), ["planned"], "nothing sent or built");

      // --no-cache: built again although up to date, and Docker runs the cached RUN step again. The new image gets
      // a tag of its own; the content tag still names the image built first, as it does on every other Machine.
      const fresh: BuildEvent[] = [];
      const forced = await prepareBuilds(project, m.builder, (e) => fresh.push(e), { noCache: true });
      const rebuilt = forced.project.services.web.image;
      refs.push(rebuilt);
      assert.match(rebuilt, new RegExp(`^${ref}-[0-9a-f]{8}$`));
      assert.equal(forced.jobs[0].upToDate, false);
      await runBuilds(forced.jobs, m.builder, (e) => fresh.push(e));
      const logs = (list: BuildEvent[]): string[] => list.flatMap((e) => e.type === "log" ? [e.text] : []);
      assert.ok(logs(fresh).some((l) => /Running in/.test(l)), logs(fresh).join("\n"));
      assert.ok(!logs(fresh).some((l) => /Using cache/.test(l)), logs(fresh).join("\n"));
      assert.equal((await s.raw.getImage(ref).inspect()).Id, image.Id, "the content tag did not move");
      assert.notEqual((await s.raw.getImage(rebuilt).inspect()).Id, image.Id, "a rebuilt image is another");
      // The next build of the same content keeps the rebuilt image the Service runs, while the builder holds it.
      const kept = await prepareBuilds(project, m.builder, () => {}, { current: { web: rebuilt } });
      assert.deepEqual([kept.project.services.web.image, kept.jobs[0].upToDate], [rebuilt, true]);
      await runBuilds(kept.jobs, m.builder, () => {});
      // Without it, a build of the same steps (another label: another tag) takes them from the cache.
      const cached: BuildEvent[] = [];
      const relabelled = projectOf(project.name, [
        serviceOf("web", ctx, { args: { GREETING: "hello" }, labels: { team: "edge" }, image: null }),
      ]);
      const other = await prepareBuilds(relabelled, m.builder, (e) => cached.push(e));
      refs.push(other.project.services.web.image);
      await runBuilds(other.jobs, m.builder, (e) => cached.push(e));
      assert.ok(logs(cached).some((l) => /Using cache/.test(l)), logs(cached).join("\n"));

      await Deno.writeTextFile(join(ctx, "app.txt"), "two\n");
      const edited = await prepareBuilds(project, m.builder, () => {});
      assert.notEqual(edited.project.services.web.image, ref, "an edited file is a new tag");
      assert.equal(edited.jobs[0].upToDate, false);
      await runBuilds(edited.jobs, m.builder, () => {});
      refs.push(edited.project.services.web.image);
    } finally {
      await removeImages(s, refs);
      await Deno.remove(ctx, { recursive: true });
    }
  },
);

async function run(s: Scope, image: string, cmd: string[]): Promise<string> {
  const container = await s.raw.createContainer({ Image: image, Cmd: cmd, Labels: { "ployz.test": s.id } });
  try {
    await container.start();
    await container.wait();
    const logs: Uint8Array = await container.logs({ stdout: true, stderr: true });
    // Docker's multiplexed frames: 8-byte headers before each chunk.
    const bytes = new Uint8Array(logs);
    let text = "";
    for (let at = 0; at + 8 <= bytes.length;) {
      const size = new DataView(bytes.buffer, bytes.byteOffset + at + 4, 4).getUint32(0);
      text += new TextDecoder().decode(bytes.subarray(at + 8, at + 8 + size));
      at += 8 + size;
    }
    return text;
  } finally {
    await container.remove({ force: true });
  }
}

dockerTest(
  "a failing RUN, a Dockerfile syntax error and a missing context each name the Service and the stage",
  async (s) => {
    await using m = await builderOf(s);
    const failing = await contextDir({ "Dockerfile": `FROM ${IMAGE}\nRUN echo about to fail && exit 3\n` });
    const syntax = await contextDir({ "Dockerfile": `FROM ${IMAGE}\nNOSUCHINSTRUCTION here\n` });
    const name = `f${s.id.replace(/[^a-z0-9]/g, "")}`.slice(0, 30);
    try {
      const events: BuildEvent[] = [];
      const prepared = await prepareBuilds(projectOf(name, [serviceOf("api", failing)]), m.builder, () => {});
      await assert.rejects(runBuilds(prepared.jobs, m.builder, (e) => events.push(e)), (e: unknown) => {
        assert.ok(e instanceof OperatorError);
        assert.equal(e.code, "invalid_argument");
        assert.match(
          e.message,
          /^Build of service "api" failed at stage "build" on Machine "m1": .*exit 3|returned a non-zero code: 3/,
        );
        const tail = e.details.tail as string[];
        assert.ok(tail.some((l) => l.includes("about to fail")), tail.join("\n"));
        return true;
      });
      assert.equal(events.at(-1)?.type, "failed");

      const bad = await prepareBuilds(projectOf(name, [serviceOf("web", syntax)]), m.builder, () => {});
      await assert.rejects(runBuilds(bad.jobs, m.builder, () => {}), (e: unknown) => {
        assert.ok(e instanceof OperatorError);
        assert.match(
          e.message,
          /^Build of service "web" failed at stage "build" on Machine "m1": .*(unknown instruction|NOSUCHINSTRUCTION)/i,
        );
        return true;
      });

      await assert.rejects(
        prepareBuilds(projectOf(name, [serviceOf("gone", join(failing, "nope"))]), m.builder, () => {}),
        /^OperatorError: Build of service "gone" failed at stage "read context": build context ".*nope" does not exist$/,
      );
    } finally {
      await Deno.remove(failing, { recursive: true });
      await Deno.remove(syntax, { recursive: true });
    }
  },
);

dockerTest(
  "a Machine that does not accept Builds refuses naming the flag; a second build of a Project waits",
  async (s) => {
    const ctx = await contextDir({ "Dockerfile": `FROM ${IMAGE}\nRUN sleep 1\n` });
    const name = `w${s.id.replace(/[^a-z0-9]/g, "")}`.slice(0, 30);
    const refs: string[] = [];
    try {
      {
        await using refusing = await builderOf(s, { name: "m2", accepts_builds: false });
        const prepared = await prepareBuilds(
          projectOf(name, [serviceOf("web", ctx)]),
          refusing.builder,
          () => {},
        );
        await assert.rejects(runBuilds(prepared.jobs, refusing.builder, () => {}), (e: unknown) => {
          assert.ok(e instanceof OperatorError);
          assert.equal(e.code, "conflict");
          assert.match(
            e.message,
            /failed at stage "send" on Machine "m1": Machine "m2" does not accept Builds \(its "accepts_builds" flag is off\)/,
          );
          return true;
        });
      }
      await using m = await builderOf(s);
      const one = await prepareBuilds(projectOf(name, [serviceOf("web", ctx)]), m.builder, () => {});
      const two = await prepareBuilds(projectOf(name, [serviceOf("web", ctx)]), m.builder, () => {});
      refs.push(one.project.services.web.image);
      const first: BuildEvent[] = [];
      const other: BuildEvent[] = [];
      await Promise.all([
        runBuilds(one.jobs, m.builder, (e) => first.push(e)),
        runBuilds(two.jobs, m.builder, (e) => other.push(e)),
      ]);
      // Either may reach the builder first: the one that waited is "the second".
      const second = first.some((e) => e.type === "waiting") ? first : other;
      const waited = second.find((e) => e.type === "waiting");
      assert.ok(waited !== undefined, JSON.stringify(second));
      assert.match(
        (waited as { text: string }).text,
        /another build of Project ".*" runs on Machine "m1"; this one waits/,
      );
      const built = second.find((e) => e.type === "built") as { built: boolean } | undefined;
      assert.equal(built?.built, false, "the second finds the image the first built");
    } finally {
      await removeImages(s, refs);
      await Deno.remove(ctx, { recursive: true });
    }
  },
);

dockerTest(
  "an upload its sender abandoned (killed mid-upload) is removed from the builder",
  async (s) => {
    await using m = await builderOf(s, { name: "m1" }, 300);
    const upload = crypto.randomUUID();
    const answer = await m.builder.api.buildUpload({ upload, offset: 0, data: btoa("partial tar") });
    assert.equal(answer.received, 11);
    const path = join(m.dir, "builds", `${upload}.tar`);
    assert.equal((await Deno.stat(path)).size, 11, "the piece is held");
    await eventually(10_000, "the abandoned upload is removed", async () => {
      return await Deno.stat(path).then(() => undefined, () => true);
    });
    assert.deepEqual(
      await Array.fromAsync(Deno.readDir(join(m.dir, "builds"))),
      [],
      "nothing left in the builds directory",
    );
  },
);
