// Builds on a one-Machine lab (root, Linux, dockerd): `ployz deploy` of a Service with `build:` (context read here,
// sent over Machine RPC, built by the Machine's Docker, one replica replaced) against the same by hand on the same
// Machine (`docker build` with the classic builder, then `docker rm -f` + `docker run -d`), each iteration with an
// edited file so both really build; an unchanged re-deploy against `ployz ps`; and the bytes a context sends
// against its size on disk, printed once. Run: deno bench --allow-all tools/bench/build_bench.ts
import { join } from "node:path";
import { type Lab, startLab } from "../../tests/support/lab.ts";
import { LAB_READY, labDownSync, mustRun } from "./lab_support.ts";

const IMAGE = "ployz-test/busybox:1";
let lab: Lab | undefined;
let project = "";
let counter = 0;

if (LAB_READY) {
  lab = await startLab("bb", 1);
  const dir = lab.dir;
  globalThis.addEventListener("unload", () => labDownSync(dir));
  project = join(dir, "project");
  await Deno.mkdir(join(project, "app/static"), { recursive: true });
  await Deno.writeTextFile(
    join(project, "compose.yaml"),
    `name: bb\nservices:\n  app:\n    build: ./app\n    command: ["sleep", "3600"]\n    stop_signal: SIGKILL\n`,
  );
  await Deno.writeTextFile(
    join(project, "app/Dockerfile"),
    `FROM ${IMAGE}\nCOPY . /app\nRUN ls -R /app > /list\n`,
  );
  await Deno.writeTextFile(join(project, "app/.dockerignore"), "node_modules\n");
  // A small web app's context: a few hundred KiB of sources, and a node_modules .dockerignore leaves out.
  for (let i = 0; i < 40; i++) {
    await Deno.writeTextFile(join(project, "app/static", `page${i}.html`), `<p>${"x".repeat(8000)}</p>\n`);
  }
  await Deno.mkdir(join(project, "app/node_modules/dep"), { recursive: true });
  await Deno.writeTextFile(join(project, "app/node_modules/dep/index.js"), "y".repeat(4 << 20));
  // First deploy: the bytes figure, and a running replica the benches replace.
  await Deno.writeTextFile(join(project, "app/version.txt"), "0\n");
  const out = await mustRun(lab.on("m1", ["deploy", "-f", join(project, "compose.yaml"), "-y", "--json"]));
  const planned = out.split("\n").filter((l) => l.includes('"type":"build"')).map((l) => JSON.parse(l).build)
    .find((b) => b.type === "planned");
  const du = new Deno.Command("du", { args: ["-sb", join(project, "app")], stdout: "piped" }).outputSync();
  console.log(
    `context: ${planned.bytes} bytes sent (tar of ${planned.entries} entries, ${planned.file_bytes} bytes of files, ${planned.ignored} left out by .dockerignore) vs ${
      new TextDecoder().decode(du.stdout).split("\t")[0]
    } bytes on disk (du -sb)`,
  );
}

/** Every case here: five timed runs after one warm-up, on the lab. */
const RUNS = { ignore: !LAB_READY, n: 5, warmup: 1 };

async function edit(): Promise<void> {
  await Deno.writeTextFile(join(project, "app/version.txt"), `${++counter}\n`);
}

Deno.bench({
  name: "docker build (classic) + docker rm -f + docker run -d, by hand on the Machine",
  group: "build and run an edited context",
  baseline: true,
  ...RUNS,
  async fn(b) {
    await edit();
    b.start();
    const tag = `bb-hand:${counter}`;
    await mustRun(lab!.docker("m1", ["build", "-q", "-t", tag, join(project, "app")]));
    await lab!.docker("m1", ["rm", "-f", "bb-hand"]);
    await mustRun(lab!.docker("m1", ["run", "-d", "--name", "bb-hand", tag, "sleep", "3600"]));
    b.end();
  },
});

Deno.bench({
  name: "ployz deploy with build: (read, send, build, replace 1 replica, --monitor 0s)",
  group: "build and run an edited context",
  ...RUNS,
  async fn(b) {
    await edit();
    b.start();
    await mustRun(
      lab!.on("m1", ["deploy", "-f", join(project, "compose.yaml"), "-y", "--monitor", "0s"]),
    );
    b.end();
  },
});

Deno.bench({
  name: "ployz ps (one call to the Machine)",
  group: "unchanged re-deploy",
  baseline: true,
  ...RUNS,
  async fn() {
    await mustRun(lab!.on("m1", ["ps"]));
  },
});

Deno.bench({
  name: "ployz deploy of an unchanged context (digest, up to date, nothing to do)",
  group: "unchanged re-deploy",
  ...RUNS,
  async fn() {
    await mustRun(lab!.on("m1", ["deploy", "-f", join(project, "compose.yaml"), "-y"]));
  },
});
