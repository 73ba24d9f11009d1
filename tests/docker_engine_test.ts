import assert from "node:assert/strict";
import { DockerError, LABELS, localLogPath } from "../lib/deploy/mod.ts";
import { dockerTest, freePort } from "./support/docker.ts";
import { eventually } from "./support/poll.ts";

dockerTest("create, start, observe, stop and remove an owned container with local logs", async (s) => {
  const spec = s.spec("life", {
    cmd: ["sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.1; done"],
  });
  const made = await s.engine.createContainer(spec);
  assert.equal(made.created, true);
  // Just created here: started without the ownership look-up; a second start finds it running and leaves it.
  await s.engine.startContainer(made.id, undefined, { name: made.name });
  await s.engine.startContainer(made.id);

  const seen = await s.engine.inspectContainer(spec.name);
  assert.ok(seen !== undefined);
  assert.equal(seen.id, made.id);
  assert.equal(seen.owned, true);
  assert.equal(seen.state, "running");
  assert.equal(seen.logDriver, "local");
  assert.equal(seen.labels[LABELS.managed], "1");
  assert.equal(seen.labels[LABELS.machine], s.machineId);
  assert.equal(seen.labels[LABELS.project], "proj");
  assert.equal(seen.labels[LABELS.service], "life");
  assert.equal(seen.labels[LABELS.deployment], spec.deployment);
  assert.equal(seen.labels[LABELS.slot], "0");
  assert.equal(seen.labels[LABELS.creationKey], spec.creationKey);
  assert.equal(seen.labels[LABELS.specDigest], made.specDigest);
  assert.equal(seen.labels[LABELS.image], spec.image, "the image reference is recorded");
  assert.equal(seen.labels[LABELS.spec], undefined, "the spec label stays out of observations");
  assert.equal(seen.labels["ployz.test"], s.id);

  const raw = await s.raw.getContainer(made.id).inspect();
  assert.deepEqual(raw.HostConfig.LogConfig, {
    Type: "local",
    Config: { "max-size": "20m", "max-file": "5", compress: "false" },
  });

  const info = await s.engine.info();
  const log = localLogPath(info.dataRoot, made.id);
  const first = await eventually(5_000, "the local log file", async () => {
    const size = (await Deno.stat(log)).size;
    return size > 0 ? size : undefined;
  }, 100);
  await eventually(
    5_000,
    "the local log file growing",
    async () => (await Deno.stat(log)).size > first ? true : undefined,
    100,
  );

  await s.engine.stopContainer(made.id, { graceSeconds: 1 });
  const stopped = await s.engine.inspectContainer(made.id);
  assert.equal(stopped?.state, "exited");
  await s.engine.stopContainer(made.id, { graceSeconds: 1 }); // already stopped: no error
  await s.engine.removeContainer(made.id);
  assert.equal(await s.engine.inspectContainer(made.id), undefined);
  await assert.rejects(
    s.engine.removeContainer(made.id),
    (e) => e instanceof DockerError && e.code === "not_found",
  );
});

dockerTest("serverVersion names the release /info names, from a ping", async (s) => {
  const version = await s.engine.serverVersion();
  assert.match(version ?? "(no Server header)", /^\d+\.\d+/);
  assert.equal(version, (await s.engine.info()).serverVersion);
  assert.equal(version, String((await s.raw.version()).Version));
});

dockerTest("a retried create with the same creation key returns the first container", async (s) => {
  const spec = s.spec("idem");
  const first = await s.engine.createContainer(spec);
  const second = await s.engine.createContainer(spec);
  assert.equal(first.created, true);
  assert.equal(second.created, false);
  assert.equal(second.id, first.id);
  const owned = await s.engine.listOwned({ creationKey: spec.creationKey });
  assert.equal(owned.length, 1);

  // Same key, different spec: refused rather than silently returning a container that is not what was asked.
  await assert.rejects(
    s.engine.createContainer({ ...spec, cmd: ["sleep", "301"] }),
    (e) => e instanceof DockerError && e.code === "conflict" && /another spec/.test(e.message),
  );
  // Same name, another creation key: refused.
  await assert.rejects(
    s.engine.createContainer({ ...spec, creationKey: `${spec.creationKey}-other` }),
    (e) => e instanceof DockerError && e.code === "conflict" && /creation key/.test(e.message),
  );
  // A caller that checked the key and the image just before skips the look-up by name: Docker's conflict on
  // create gives the same answers.
  const checked = { checked: true };
  assert.equal((await s.engine.createContainer(spec, undefined, checked)).id, first.id);
  await assert.rejects(
    s.engine.createContainer({ ...spec, creationKey: `${spec.creationKey}-other` }, undefined, checked),
    (e) => e instanceof DockerError && e.code === "conflict" && /creation key/.test(e.message),
  );
});

dockerTest("a hand-made container with the same name is never touched", async (s) => {
  const spec = s.spec("hand");
  const hand = await s.raw.createContainer({
    name: spec.name,
    Image: spec.image,
    Cmd: ["sleep", "300"],
    Labels: { "ployz.test": s.id },
  });
  await hand.start();

  for (
    const attempt of [
      () => s.engine.stopContainer(spec.name, { graceSeconds: 1 }),
      () => s.engine.removeContainer(spec.name, { force: true }),
      () => s.engine.startContainer(spec.name),
      () => s.engine.renameContainer(spec.name, `${spec.name}-x`),
    ]
  ) {
    await assert.rejects(attempt(), (e) => {
      assert.ok(e instanceof DockerError);
      assert.equal(e.code, "conflict");
      assert.equal(e.details.container, spec.name);
      assert.equal(e.details.label, LABELS.managed);
      assert.match(
        e.message,
        /^Refusing to \w+ container ".*": Ployz does not own it \(label "ployz.managed" is missing\)$/,
      );
      return true;
    });
  }
  for (const options of [{}, { checked: true }]) {
    await assert.rejects(s.engine.createContainer(spec, undefined, options), (e) => {
      assert.ok(e instanceof DockerError);
      assert.equal(e.code, "conflict");
      assert.equal(
        e.message,
        `Cannot create container "${spec.name}": the name is taken by a container Ployz does not own (label "ployz.managed" is missing)`,
      );
      return true;
    });
  }
  const still = await hand.inspect();
  assert.equal(still.State.Running, true);
  assert.equal(still.Name, `/${spec.name}`);
  assert.equal((await s.engine.listOwned()).length, 0);
});

dockerTest("a container another Machine owns is refused", async (s) => {
  const other = s.engineFor({ machineId: `${s.machineId}-other` });
  const made = await other.createContainer(s.spec("theirs"));
  await assert.rejects(s.engine.startContainer(made.id), (e) => {
    assert.ok(e instanceof DockerError);
    assert.equal(e.code, "conflict");
    assert.equal(e.details.label, LABELS.machine);
    assert.match(e.message, /belongs to Machine/);
    return true;
  });
  assert.equal((await s.engine.listOwned()).length, 0);
  assert.equal((await other.listOwned()).length, 1);
});

dockerTest("a published host port serves HTTP", async (s) => {
  const port = freePort();
  const spec = s.spec("web", {
    cmd: ["httpd", "-f", "-p", "80", "-h", "/www"],
    ports: [{ containerPort: 80, hostPort: port, hostIp: "127.0.0.1" }],
  });
  const made = await s.engine.createContainer(spec);
  await s.engine.startContainer(made.id);
  const seen = await s.engine.inspectContainer(made.id);
  assert.deepEqual(seen?.ports, [{
    containerPort: 80,
    protocol: "tcp",
    hostIp: "127.0.0.1",
    hostPort: port,
  }]);
  const body = await eventually(10_000, "the published port answering", async () => {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/`);
      const text = await response.text();
      return response.ok ? text : undefined;
    } catch {
      return undefined;
    }
  }, 100);
  assert.ok(body.length > 0);
});

dockerTest("observations carry environment keys, never values; readSpec keeps them locally", async (s) => {
  const spec = s.spec("env", { env: { SECRET_TOKEN: "hunter2-value", MODE: "a=b" } });
  const made = await s.engine.createContainer(spec);
  const listed = await s.engine.listOwned({ service: "env" });
  assert.equal(listed.length, 1);
  const text = JSON.stringify(listed) + JSON.stringify(await s.engine.rescan()) +
    JSON.stringify(await s.engine.inspectContainer(made.id));
  assert.ok(!text.includes("hunter2"), "an env value leaked into an observation");
  assert.ok(!text.includes("a=b"));
  assert.ok(listed[0].envKeys.includes("SECRET_TOKEN"));
  const back = await s.engine.readSpec(made.id);
  assert.deepEqual(back, spec);
});

dockerTest("named volumes are created owned; a foreign volume is refused", async (s) => {
  const volume = `ployz-test-${s.id}-data`;
  const made = await s.engine.createContainer(
    s.spec("vol", { mounts: [{ type: "volume", source: volume, target: "/data" }] }),
  );
  const v = await s.raw.getVolume(volume).inspect();
  assert.equal(v.Labels[LABELS.managed], "1");
  assert.equal(v.Labels[LABELS.machine], s.machineId);
  assert.equal(made.created, true);

  // A removal on behalf of another Project is refused by the volume's own label, and the volume stays.
  await s.engine.removeContainer(made.id, { force: true });
  await assert.rejects(
    s.engine.removeVolume(volume, undefined, "someone-else"),
    (e) => e instanceof DockerError && e.code === "conflict" && e.details.volume === volume,
  );
  assert.equal((await s.raw.getVolume(volume).inspect()).Name, volume);

  const foreign = `ployz-test-${s.id}-foreign`;
  await s.raw.createVolume({ Name: foreign, Labels: { "ployz.test": s.id } });
  await assert.rejects(
    s.engine.createContainer(
      s.spec("vol2", { mounts: [{ type: "volume", source: foreign, target: "/data" }] }),
    ),
    (e) => e instanceof DockerError && e.code === "conflict" && e.details.volume === foreign,
  );
});

dockerTest("a missing image is refused before create", async (s) => {
  await assert.rejects(
    s.engine.createContainer(s.spec("noimg", { image: `ployz-test/absent:${s.id}` })),
    (e) => e instanceof DockerError && e.code === "not_found" && /is not on this Machine/.test(e.message),
  );
});

dockerTest(
  "a create refuses a network that is missing or not this Machine's, as checkNetwork does first",
  async (s) => {
    const missing = s.spec("no-network", { network: { name: `ployz-test-${s.id}-missing` } });
    for (const attempt of [() => s.engine.checkNetwork(missing), () => s.engine.createContainer(missing)]) {
      await assert.rejects(attempt(), (e) => {
        assert.ok(e instanceof DockerError);
        assert.equal(e.code, "not_found");
        assert.equal(
          e.message,
          `Cannot create container "${missing.name}": network "ployz-test-${s.id}-missing" does not exist`,
        );
        return true;
      });
    }
    const name = `ployz-test-${s.id}-hand`;
    const hand = await s.raw.createNetwork({ Name: name, Labels: { "ployz.test": s.id } });
    try {
      const foreign = s.spec("hand-network", { network: { name } });
      for (const attempt of [() => s.engine.checkNetwork(foreign), () => s.engine.createContainer(foreign)]) {
        await assert.rejects(attempt(), (e) => {
          assert.ok(e instanceof DockerError);
          assert.equal(e.code, "conflict");
          assert.match(e.message, /Ployz does not own it/);
          return true;
        });
      }
      // A spec without a network has nothing to check.
      await s.engine.checkNetwork(s.spec("default-network"));
      assert.equal((await s.engine.listOwned()).length, 0);
    } finally {
      await hand.remove();
    }
  },
);
