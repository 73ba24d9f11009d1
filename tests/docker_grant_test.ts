import assert from "node:assert/strict";
import { DOCKER_SOCKET, dockerTest, IMAGE } from "./support/docker.ts";

// The daemon runs with read, write and net on the socket alone, and --ignore-env; the adapter must work there.
dockerTest("the adapter works under the minimal Docker grant", async (s) => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/probe.ts`;
    await Deno.writeTextFile(
      script,
      `import { openEngine } from ${
        JSON.stringify(new URL("../lib/deploy/docker/mod.ts", import.meta.url).href)
      };
const [socketPath, machineId, testId, image] = Deno.args;
const engine = openEngine({ socketPath, machineId, extraLabels: { "ployz.test": testId } });
await engine.ping();
const made = await engine.createContainer({
  name: "ployz-test-" + testId + "-grant", creationKey: "ck-" + testId, project: "p", service: "s",
  deployment: "d", slot: "0", image, cmd: ["sleep", "30"],
});
await engine.startContainer(made.id);
const seen = await engine.inspectContainer(made.id);
await engine.stopContainer(made.id, { graceSeconds: 0 });
await engine.removeContainer(made.id);
console.log(JSON.stringify({ state: seen?.state, owned: seen?.owned }));
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--config",
        new URL("../deno.json", import.meta.url).pathname,
        `--allow-read=${DOCKER_SOCKET}`,
        `--allow-write=${DOCKER_SOCKET}`,
        `--allow-net=unix:${DOCKER_SOCKET}`,
        "--allow-env=PLOYZ_*",
        "--ignore-env",
        script,
        DOCKER_SOCKET,
        s.machineId,
        s.id,
        IMAGE,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(output.stdout)), { state: "running", owned: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
