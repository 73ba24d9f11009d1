// Builds on a real three-Machine lab: a Project with two built Services and one from a local image, deployed from
// m1 with replicas on every Machine. The builder (m1, the Entry Machine) builds with its own dockerd's build API,
// m2 and m3 get the images by peer copy; a second Deploy builds nothing; an edited file rebuilds and replaces only
// its Service; a failing RUN ends the Deploy before anything is replaced; `ployz build --builder m2` builds there.
// Then: `ployz cleanup` removes superseded built images; `deploy --no-cache` builds again under tags of their own
// and every Machine runs the one rebuilt image; a context over the limit is refused before anything is sent; the
// CLI killed mid-upload (SIGKILL) leaves no temporary file on its side and nothing on the builder, and a re-run
// succeeds; the builder cut off mid-build fails the build stage naming it, and a re-run after healing succeeds.
// Abandoned uploads are removed after 10 s here (PLOYZ_BUILD_UPLOAD_IDLE_MS; 30 s by default).
import assert from "node:assert/strict";
import { join } from "node:path";
import { lastOutcome } from "./support/daemon.ts";
import { type Lab, machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";
import { ROOT } from "./support/spawn.ts";

const IMAGE = "ployz-test/busybox:1";

interface OpJson {
  kind: string;
  service: string;
  reason?: string;
  "machine_name": string;
}

interface OutcomeJson {
  status: string;
  completed: OpJson[];
}

interface BuildJson {
  type: string;
  service: string;
  text?: string;
  "up_to_date"?: boolean;
  "file_bytes"?: number;
  upToDate?: boolean;
  ref?: string;
  bytes?: number;
  built?: boolean;
}

/** The build events of a `--json` transcript. */
function builds(stdout: string): BuildJson[] {
  return stdout.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
    .filter((l) => l.type === "build").map((l) => l.build as BuildJson);
}

const COMPOSE = `name: bld
services:
  web:
    build: ./web
    command: ["sleep", "3600"]
    deploy: {replicas: 3}
    stop_signal: SIGKILL
  api:
    build:
      context: ./api
      dockerfile: docker/Dockerfile
      args: {VERSION: "7"}
    command: ["sleep", "3600"]
    deploy: {replicas: 3}
    stop_signal: SIGKILL
  cache:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy: {replicas: 3}
    stop_signal: SIGKILL
`;

async function writeProject(dir: string): Promise<string> {
  const files: Record<string, string> = {
    "compose.yaml": COMPOSE,
    "web/Dockerfile": `FROM ${IMAGE}\nCOPY msg.txt /msg.txt\n`,
    "web/msg.txt": "v1\n",
    "web/.dockerignore": "*.tmp\n",
    "web/big.tmp": "x".repeat(1 << 20),
    "api/docker/Dockerfile": `FROM ${IMAGE}\nARG VERSION\nRUN echo "api $VERSION" > /version\n`,
  };
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(dir, name, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, name), text);
  }
  return join(dir, "compose.yaml");
}

/** What the Service's container on Machine `m` reads from `path`. */
async function readIn(lab: Lab, m: string, service: string, path: string): Promise<string> {
  const ps = await lab.docker(m, [
    "ps",
    "-q",
    "--filter",
    "label=ployz.project=bld",
    "--filter",
    `label=ployz.service=${service}`,
  ]);
  const id = ps.stdout.trim().split("\n")[0];
  assert.ok(id, `a ${service} container runs on ${m}`);
  const r = await lab.docker(m, ["exec", id, "cat", path]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

/** Built images Machine `m` holds for Project "bld", by reference. */
async function builtOn(lab: Lab, m: string): Promise<string[]> {
  const r = await lab.docker(m, [
    "images",
    "--format",
    "{{.Repository}}:{{.Tag}}",
    "--filter",
    "reference=bld-*",
  ]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim().split("\n").filter((l) => l !== "").sort();
}

/** The image ids Project "bld"'s `service` containers on Machine `m` run. */
async function runningIds(lab: Lab, m: string, service: string): Promise<string[]> {
  const ps = await lab.docker(m, [
    "ps",
    "-q",
    "--filter",
    "label=ployz.project=bld",
    "--filter",
    `label=ployz.service=${service}`,
  ]);
  const ids = ps.stdout.trim().split("\n").filter((l) => l !== "");
  assert.ok(ids.length > 0, `a ${service} container runs on ${m}`);
  const r = await lab.docker(m, ["inspect", "--format", "{{.Image}}", ...ids]);
  assert.equal(r.code, 0, r.stderr);
  return [...new Set(r.stdout.trim().split("\n"))];
}

/** The id of image `ref` on Machine `m`. */
async function imageIdOn(lab: Lab, m: string, ref: string): Promise<string> {
  const r = await lab.docker(m, ["image", "inspect", "--format", "{{.Id}}", ref]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

/** Files in Machine `m`'s build upload directory. */
function uploadsOn(lab: Lab, m: string): string[] {
  try {
    return [...Deno.readDirSync(join(lab.dir, m, "ployz", "builds"))].map((e) => e.name);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** `ployz` on Machine `m`'s socket, running: its stdout lines as they come, and the process to kill. */
function started(lab: Lab, m: string, args: string[], extra: Record<string, string> = {}) {
  const child = new Deno.Command(join(ROOT, "bin", "ployz"), {
    args,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", ...lab.envOn(m), ...extra },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const stderr = new Response(child.stderr).text();
  const reading = (async () => {
    let buffer = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      let at: number;
      while ((at = buffer.indexOf("\n")) >= 0) {
        lines.push(buffer.slice(0, at));
        buffer = buffer.slice(at + 1);
      }
    }
    if (buffer !== "") lines.push(buffer);
  })();
  return {
    child,
    lines,
    /**
     * Waits for the CLI to exit. With `withinMs`, a CLI still running then is killed and the step fails with what it
     * printed so far, rather than hanging the run.
     */
    async done(withinMs?: number): Promise<{ code: number; stdout: string; stderr: string }> {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = withinMs === undefined ? undefined : new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), withinMs);
      });
      const first = await (late === undefined ? child.status : Promise.race([child.status, late]));
      clearTimeout(timer);
      if (first === "late") {
        child.kill("SIGKILL");
        await child.status;
        await reading;
        throw new Error(
          `ployz ${args.join(" ")} still ran after ${withinMs} ms; it printed:\n${
            lines.join("\n")
          }\n${await stderr}`,
        );
      }
      const status = await child.status;
      await reading;
      return { code: status.code, stdout: lines.join("\n"), stderr: await stderr };
    },
  };
}

Deno.test(needs(["lab"], {
  name: "builds on a 3-Machine lab: built once on the builder, copied to peers, rebuilt only when changed",
  async fn(t) {
    await using lab = await startLab("bd", 3, { env: { PLOYZ_BUILD_UPLOAD_IDLE_MS: "10000" } });
    await machinesUp(lab, "m1", 3);
    const compose = await writeProject(join(lab.dir, "project"));
    const project = join(lab.dir, "project");
    let firstWeb = "";
    const deploy = (...extra: string[]) =>
      lab.on("m1", ["deploy", "-f", compose, "-y", "--json", "--monitor", "1s", ...extra]);

    await t.step("two built Services and one local image, 3 replicas each across 3 Machines", async () => {
      const started = performance.now();
      const r = await deploy();
      const ms = performance.now() - started;
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const events = builds(r.stdout);
      const planned = events.filter((e) => e.type === "planned");
      assert.deepEqual(planned.map((e) => [e.service, e.up_to_date]), [["api", false], ["web", false]]);
      const web = planned.find((e) => e.service === "web")!;
      firstWeb = web.ref!;
      let onDisk = 0;
      for await (const entry of Deno.readDir(join(project, "web"))) {
        onDisk += (await Deno.stat(join(project, "web", entry.name))).size;
      }
      assert.ok(web.bytes! < 64 * 1024, `.dockerignore kept the 1 MiB file out: ${web.bytes} bytes sent`);
      assert.deepEqual(events.filter((e) => e.type === "built").map((e) => [e.service, e.built]), [
        ["api", true],
        ["web", true],
      ]);
      const outcome = lastOutcome<OutcomeJson>(r.stdout);
      assert.equal(outcome.status, "succeeded");
      const copies = outcome.completed.filter((op) => op.kind === "image").map((op) => op.machine_name)
        .sort();
      assert.deepEqual(copies, ["m2", "m2", "m3", "m3"], "each built image copied from m1 to m2 and m3");
      for (const m of ["m1", "m2", "m3"]) {
        assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v1\n");
        assert.equal(await readIn(lab, m, "api", "/version"), "api 7\n");
      }
      console.log(
        `build + deploy of 2 built Services and 1 image, 9 containers on 3 Machines: ${
          (ms / 1000).toFixed(1)
        } s; web's context: ${web.bytes} bytes sent, ${web.file_bytes} bytes of files packed, ${onDisk} bytes on disk`,
      );
    });

    await t.step("the same Deploy again builds and sends nothing", async () => {
      const started = performance.now();
      const r = await deploy();
      const ms = performance.now() - started;
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const events = builds(r.stdout);
      assert.deepEqual(events.map((e) => [e.type, e.service, e.up_to_date]), [
        ["planned", "api", true],
        ["planned", "web", true],
      ]);
      assert.deepEqual(lastOutcome<OutcomeJson>(r.stdout).completed, []);
      const text = await lab.on("m1", ["deploy", "-f", compose, "-y", "--monitor", "1s"]);
      assert.match(text.stdout, /build web: up to date as bld-web:[0-9a-f]{16} on m1/);
      console.log(`unchanged re-deploy: ${(ms / 1000).toFixed(1)} s`);
    });

    await t.step("editing one file rebuilds and replaces only that Service", async () => {
      await Deno.writeTextFile(join(lab.dir, "project/web/msg.txt"), "v2\n");
      const r = await deploy();
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const events = builds(r.stdout);
      assert.deepEqual(events.filter((e) => e.type === "planned").map((e) => [e.service, e.up_to_date]), [
        ["api", true],
        ["web", false],
      ]);
      const outcome = lastOutcome<OutcomeJson>(r.stdout);
      assert.equal(outcome.status, "succeeded");
      const touched = new Set(
        outcome.completed.filter((op) => op.kind !== "image" && op.kind !== "point").map((op) => op.service),
      );
      assert.deepEqual([...touched], ["web"], JSON.stringify(outcome.completed));
      for (const m of ["m1", "m2", "m3"]) assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v2\n");
    });

    await t.step(
      "a failing RUN ends the Deploy before anything is replaced, with the log's tail",
      async () => {
        const dockerfile = join(lab.dir, "project/web/Dockerfile");
        const good = await Deno.readTextFile(dockerfile);
        await Deno.writeTextFile(dockerfile, `${good}RUN echo broken step && exit 7\n`);
        await Deno.writeTextFile(join(lab.dir, "project/web/msg.txt"), "v3\n");
        const r = await deploy();
        await Deno.writeTextFile(dockerfile, good);
        assert.notEqual(r.code, 0);
        const error = JSON.parse(r.stdout.trim().split("\n").at(-1)!).error;
        assert.equal(error.code, "invalid_argument");
        assert.match(
          error.message,
          /^Build of service "web" failed at stage "build" on Machine "m1": .*non-zero code: 7; stages "distribute" and "deploy" not attempted, nothing changed$/,
        );
        assert.deepEqual([error.details.service, error.details.stage], ["web", "build"]);
        const failed = builds(r.stdout).find((e) => e.type === "failed") as
          | { tail?: string[]; stage?: string }
          | undefined;
        assert.equal(failed?.stage, "build", r.stdout);
        assert.ok(failed?.tail?.some((l) => l.includes("broken step")), r.stdout);
        assert.doesNotMatch(r.stdout, /"type":"outcome"/, "nothing ran");
        for (const m of ["m1", "m2", "m3"]) assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v2\n");
      },
    );

    await t.step(
      "ployz build SERVICE --builder m2 builds there without deploying; bad names refused",
      async () => {
        const r = await lab.on("m1", ["build", "-f", compose, "web", "--builder", "m2"]);
        assert.equal(r.code, 0, r.stderr + r.stdout);
        const ref = /build web on m2 as (bld-web:[0-9a-f]{16})/.exec(r.stdout)?.[1];
        assert.ok(ref !== undefined, r.stdout);
        assert.match(r.stdout, /^--- build ---\nbuild web: sending .* to m2 \(limit 512\.0 MiB\)$/m);
        assert.match(r.stdout, /build web: built bld-web:/);
        assert.equal((await lab.docker("m2", ["image", "inspect", ref])).code, 0, "built on m2");
        assert.notEqual((await lab.docker("m1", ["image", "inspect", ref])).code, 0, "not on m1");
        const still = await readIn(lab, "m1", "web", "/msg.txt");
        assert.equal(still, "v2\n", "ployz build deploys nothing");
        const none = await lab.on("m1", ["build", "-f", compose, "nosuch"]);
        assert.notEqual(none.code, 0);
        assert.match(none.stderr, /error\[not_found\]: No service "nosuch" in Project "bld"/);
        const cache = await lab.on("m1", ["build", "-f", compose, "cache"]);
        assert.match(cache.stderr, /error\[invalid_argument\]: Service "cache" has no "build:"/);
        const off = await lab.on("m1", ["machine", "accept", "m2", "--builds", "off"]);
        assert.match(off.stdout, /; builds off/, off.stderr);
        const refused = await lab.on("m1", ["build", "-f", compose, "web", "--builder", "m2", "--no-cache"]);
        assert.match(
          refused.stderr,
          /error\[conflict\]: Build of service "web" failed at stage "send" on Machine "m2": Machine "m2" does not accept Builds \(its "accepts_builds" flag is off\)/,
        );
        await lab.on("m1", ["machine", "accept", "m2", "--builds", "on"]);
        const builder = await lab.on("m1", ["build", "-f", compose, "--builder", "m9"]);
        assert.match(builder.stderr, /error\[not_found\]: No Machine "m9" for "--builder"/);
      },
    );
    await t.step("ployz cleanup removes superseded built images with their stopped containers", async () => {
      const running =
        (await lab.docker("m1", ["ps", "--format", "{{.Image}}", "--filter", "label=ployz.project=bld"]))
          .stdout.trim().split("\n").filter((i) => i.startsWith("bld-"));
      const current = [...new Set(running)].sort();
      assert.equal(current.length, 2, running.join(","));
      for (const m of ["m1", "m2", "m3"]) {
        assert.ok((await builtOn(lab, m)).includes(firstWeb), `${firstWeb} on ${m}`);
      }
      // The replaced containers still hold the old image: `cleanup` removes them, then the images (prune's route).
      const r = await lab.on("m1", ["cleanup", "-y", "--json"]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      for (const m of ["m1", "m2", "m3"]) {
        assert.deepEqual(await builtOn(lab, m), current, `only the running built images stay on ${m}`);
      }
    });

    await t.step(
      "deploy --no-cache builds again under tags of their own; every Machine runs the one rebuilt image",
      async () => {
        await Deno.writeTextFile(join(project, "web/msg.txt"), "v2\n");
        const before: Record<string, string> = {};
        for (const service of ["api", "web"]) {
          [before[service]] = await runningIds(lab, "m1", service);
        }
        const r = await deploy("--no-cache");
        assert.equal(r.code, 0, r.stderr + r.stdout);
        const events = builds(r.stdout);
        const planned = events.filter((e) => e.type === "planned");
        assert.deepEqual(planned.map((e) => [e.service, e.up_to_date]), [["api", false], ["web", false]]);
        for (const e of planned) {
          assert.match(e.ref!, new RegExp(`^bld-${e.service}:[0-9a-f]{16}-[0-9a-f]{8}$`));
        }
        const logs = events.filter((e) => e.type === "log" && e.service === "api").map((e) => e.text!);
        assert.ok(logs.some((l) => /Running in/.test(l)), `api's RUN step ran again: ${logs.join("\n")}`);
        assert.ok(!logs.some((l) => /Using cache/.test(l)), logs.join("\n"));
        const outcome = lastOutcome<OutcomeJson>(r.stdout);
        assert.equal(outcome.status, "succeeded");
        const replaced = new Set(
          outcome.completed.filter((op) => op.kind === "replace").map((op) => op.service),
        );
        assert.deepEqual([...replaced].sort(), ["api", "web"], JSON.stringify(outcome.completed));
        for (const e of planned) {
          const rebuilt = await imageIdOn(lab, "m1", e.ref!);
          assert.notEqual(rebuilt, before[e.service], `${e.service} is another image`);
          // The content tag still names the first build, on every Machine that holds it.
          assert.equal(await imageIdOn(lab, "m1", e.ref!.slice(0, -9)), before[e.service]);
          for (const m of ["m1", "m2", "m3"]) {
            // A replaced container runs on until every Machine acked the moved Serving Pointer (the retire loop).
            await eventually(60_000, `only ${e.ref} runs as ${e.service} on ${m}`, async () => {
              const ids = await runningIds(lab, m, e.service);
              return ids.length === 1 && ids[0] === rebuilt ? true : undefined;
            }, 500);
            assert.equal(await imageIdOn(lab, m, e.ref!), rebuilt, `${e.ref} on ${m}`);
          }
        }
        for (const m of ["m1", "m2", "m3"]) assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v2\n");
        // The next Deploy of the same content keeps the rebuilt images: nothing built, nothing replaced (it only
        // removes the containers the rebuilt ones superseded).
        const again = await deploy();
        assert.equal(again.code, 0, again.stderr + again.stdout);
        assert.deepEqual(
          builds(again.stdout).map((e) => [e.type, e.service, e.up_to_date, e.ref]),
          planned.map((e) => ["planned", e.service, true, e.ref]),
        );
        const done = lastOutcome<OutcomeJson>(again.stdout).completed;
        assert.deepEqual(
          done.filter((op) => op.kind !== "remove" || op.reason !== "superseded"),
          [],
          JSON.stringify(done),
        );
      },
    );

    await t.step(
      "a context over the limit fails before anything is sent, naming the limit, size and file",
      async () => {
        const huge = join(project, "web/huge.bin");
        // Sparse: the size on disk is what is judged, before the file is read.
        await Deno.writeFile(huge, new Uint8Array());
        await Deno.truncate(huge, 513 * 1024 * 1024);
        try {
          const r = await deploy();
          assert.notEqual(r.code, 0);
          const error = JSON.parse(r.stdout.trim().split("\n").at(-1)!).error;
          assert.equal(error.code, "invalid_argument");
          assert.match(
            error.message,
            /^Build of service "web" failed at stage "read context": build context ".*\/web" is over the limit of 512\.0 MiB: with "huge\.bin" \(513\.0 MiB\) it holds at least 513\.\d MiB; list what the image does not need in its \.dockerignore$/,
          );
          assert.deepEqual(builds(r.stdout).filter((e) => e.type !== "planned"), [], "nothing sent");
          assert.deepEqual(uploadsOn(lab, "m1"), []);
        } finally {
          await Deno.remove(huge);
        }
      },
    );

    await t.step(
      "the CLI killed mid-upload leaves no image or upload on the builder; a re-run succeeds",
      async () => {
        // 16 pieces of upload: the kill lands after the first and long before the last, even on a quiet host
        // (the line printed below says where); each byte is sent, built and copied to two Machines again.
        const size = 32 * 1024 * 1024;
        const zeros = join(project, "web/zeros.bin");
        await Deno.writeFile(zeros, new Uint8Array());
        await Deno.truncate(zeros, size);
        await Deno.writeTextFile(join(project, "web/msg.txt"), "v4\n");
        const args = ["deploy", "-f", compose, "-y", "--json", "--monitor", "1s", "--builder", "m2"];
        try {
          // The CLI's temporary tar has no name once open: killed, it leaves nothing in its temporary directory.
          const tmp = join(lab.dir, "killed-tmp");
          await Deno.mkdir(tmp);
          const cli = started(lab, "m1", args, { TMPDIR: tmp });
          const held = (): number[] =>
            uploadsOn(lab, "m2").map((n) => Deno.statSync(join(lab.dir, "m2/ployz/builds", n)).size);
          await eventually(
            60_000,
            "a piece of the upload reaches m2",
            () => held().some((bytes) => bytes > 0) || undefined,
            50,
          );
          cli.child.kill("SIGKILL");
          console.log(
            `upload killed with ${Math.max(0, ...held())} bytes on m2 (the context holds over ${size})`,
          );
          const killed = await cli.done();
          assert.notEqual(killed.code, 0);
          assert.deepEqual(
            (await Array.fromAsync(Deno.readDir(tmp))).map((e) => e.name),
            [],
            "no temporary file left",
          );
          const ref = builds(killed.stdout).find((e) => e.type === "planned" && e.service === "web")?.ref;
          assert.ok(
            ref !== undefined && !builds(killed.stdout).some((e) => e.type === "sent"),
            killed.stdout,
          );
          assert.notEqual((await lab.docker("m2", ["image", "inspect", ref])).code, 0, "no image on m2");
          const r = await lab.on("m1", args);
          assert.equal(r.code, 0, r.stderr + r.stdout);
          assert.equal(lastOutcome<OutcomeJson>(r.stdout).status, "succeeded");
          for (const m of ["m1", "m2", "m3"]) assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v4\n");
          await eventually(
            90_000,
            "m2 removes the abandoned upload",
            () => uploadsOn(lab, "m2").length === 0 || undefined,
          );
        } finally {
          await Deno.remove(zeros);
        }
      },
    );

    await t.step(
      "the builder cut off mid-build: the build stage fails naming it, nothing else is tried",
      async () => {
        const dockerfile = join(project, "web/Dockerfile");
        const good = await Deno.readTextFile(dockerfile);
        await Deno.writeTextFile(dockerfile, `${good}RUN sleep 6 && echo slow step\n`);
        await Deno.writeTextFile(join(project, "web/msg.txt"), "v5\n");
        const args = ["deploy", "-f", compose, "-y", "--json", "--monitor", "1s", "--builder", "m2"];
        let healed = false;
        try {
          const cli = started(lab, "m1", args);
          await eventually(
            60_000,
            "m2 runs the slow step",
            () =>
              builds(cli.lines.join("\n")).some((e) => e.type === "log" && /RUN sleep 6/.test(e.text!)) ||
              undefined,
            100,
          );
          await lab.lab(["partition", "m1,m3", "/", "m2"]);
          // 15 s of silence ends the build stage; a Snapshot question m2 took just before the cut waits at most
          // 60 s. The bound leaves room for a loaded host.
          const r = await cli.done(150_000);
          assert.notEqual(r.code, 0);
          const error = JSON.parse(r.stdout.trim().split("\n").at(-1)!).error;
          assert.equal(error.code, "unavailable");
          assert.match(
            error.message,
            /^Build of service "web" failed at stage "build" on Machine "m2": Machine "m2" sent nothing for 15 s: .*; stages "distribute" and "deploy" not attempted, nothing changed$/,
          );
          assert.deepEqual(error.details.not_attempted, ["distribute", "deploy"]);
          assert.doesNotMatch(r.stdout, /"type":"outcome"/, "nothing ran");
          for (const m of ["m1", "m2", "m3"]) {
            assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v4\n");
          }
          await lab.lab(["heal"]);
          healed = true;
          await machinesUp(lab, "m1", 3);
          await eventually(
            120_000,
            "m1 reaches m2 again",
            async () =>
              (await lab.on("m1", ["image", "ls", "--machine", "m2", "--json"])).code === 0 || undefined,
            1000,
          );
          const again = await lab.on("m1", args);
          assert.equal(again.code, 0, again.stderr + again.stdout);
          assert.equal(lastOutcome<OutcomeJson>(again.stdout).status, "succeeded");
          for (const m of ["m1", "m2", "m3"]) {
            assert.equal(await readIn(lab, m, "web", "/msg.txt"), "v5\n");
          }
        } finally {
          if (!healed) {
            await lab.lab(["heal"]);
          }
          await Deno.writeTextFile(dockerfile, good);
        }
      },
    );
  },
}));
