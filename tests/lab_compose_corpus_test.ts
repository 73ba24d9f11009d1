// Real Compose files deploy as written, as root on a three-Machine lab: the corpus entries marked `lab` are deployed
// unchanged with `ployz deploy -f …` through m1; `docker inspect` of every container on every Machine shows each
// honoured key of its Service, and every published port answers on the Machine that runs the Service.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { NormalizedService } from "../lib/deploy/mod.ts";
import { loadCompose } from "../lib/deploy/mod.ts";
import { corpus, corpusEnv, corpusFiles } from "./support/compose_corpus.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

const IMAGE = "ployz-test/busybox:1";

// deno-lint-ignore no-explicit-any
type Inspect = any;

function sortedList(list: string[] | null | undefined): string[] {
  return [...(list ?? [])].sort();
}

/** Asserts that every key the Service sets is on the container Docker reports. */
function assertHonoured(service: NormalizedService, c: Inspect, where: string): void {
  const host = c.HostConfig;
  const config = c.Config;
  const at = `${where} ${service.name}`;
  const r = service.resources;
  if (r.nanoCpus !== null) assert.equal(host.NanoCpus, r.nanoCpus, `${at} cpus`);
  if (r.memoryBytes !== null) assert.equal(host.Memory, r.memoryBytes, `${at} memory`);
  if (r.memoryReservationBytes !== null) {
    assert.equal(host.MemoryReservation, r.memoryReservationBytes, `${at} memory reservation`);
  }
  if (r.shmSizeBytes !== null) assert.equal(host.ShmSize, r.shmSizeBytes, `${at} shm_size`);
  if (service.pidsLimit !== null && service.pidsLimit !== undefined) {
    assert.equal(host.PidsLimit, service.pidsLimit, `${at} pids`);
  }
  for (const [name, limit] of Object.entries(r.ulimits)) {
    const found = (host.Ulimits ?? []).find((u: { Name: string }) => u.Name === name);
    assert.deepEqual(found, { Name: name, Soft: limit.soft, Hard: limit.hard }, `${at} ulimit ${name}`);
  }
  assert.deepEqual(sortedList(host.CapAdd), sortedList(service.capAdd), `${at} cap_add`);
  assert.deepEqual(sortedList(host.CapDrop), sortedList(service.capDrop), `${at} cap_drop`);
  for (const [key, value] of Object.entries(service.sysctls)) {
    assert.equal(host.Sysctls?.[key], value, `${at} ${key}`);
  }
  if (service.init !== null) assert.equal(host.Init, service.init, `${at} init`);
  assert.equal(host.ReadonlyRootfs, service.readOnly === true, `${at} read_only`);
  assert.equal(host.Privileged, service.privileged, `${at} privileged`);
  assert.deepEqual(sortedList(host.SecurityOpt), sortedList(service.securityOpt), `${at} security_opt`);
  assert.deepEqual(sortedList(host.ExtraHosts), sortedList(service.extraHosts), `${at} extra_hosts`);
  if (service.hostname !== null) assert.equal(config.Hostname, service.hostname, `${at} hostname`);
  assert.equal(config.Tty, service.tty, `${at} tty`);
  assert.equal(config.OpenStdin, service.stdinOpen, `${at} stdin_open`);
  if (service.user !== null) assert.equal(config.User, service.user, `${at} user`);
  if (service.workingDir !== null) assert.equal(config.WorkingDir, service.workingDir, `${at} working_dir`);
  if (service.stopSignal !== null) assert.equal(config.StopSignal, service.stopSignal, `${at} stop_signal`);
  if (service.command !== null) assert.deepEqual(config.Cmd, service.command, `${at} command`);
  for (const [key, value] of Object.entries(service.labels)) {
    assert.equal(config.Labels[key], value, `${at} ${key}`);
  }
  const env = new Set<string>(config.Env ?? []);
  for (const [key, value] of Object.entries(service.environment)) {
    assert.ok(env.has(`${key}=${value}`), `${at} environment ${key}`);
  }
  assert.equal(host.LogConfig.Type, service.logging.driver, `${at} log driver`);
  for (const [key, value] of Object.entries(service.logging.options)) {
    assert.equal(host.LogConfig.Config[key], value, `${at} log option ${key}`);
  }
  const mounts = new Map<string, Inspect>((host.Mounts ?? []).map((m: { Target: string }) => [m.Target, m]));
  for (const mount of service.mounts) {
    const found = mounts.get(mount.target);
    assert.ok(found !== undefined, `${at} mount ${mount.target}`);
    assert.equal(found.Type, mount.type, `${at} mount ${mount.target} type`);
    if (mount.type === "tmpfs" && mount.sizeBytes !== null) {
      assert.equal(found.TmpfsOptions?.SizeBytes, mount.sizeBytes, `${at} tmpfs ${mount.target} size`);
    }
    if (mount.type === "bind") assert.equal(found.Source, mount.source, `${at} bind ${mount.target}`);
  }
  for (const port of service.ports) {
    if (port.kind !== "host") continue;
    const bindings = host.PortBindings?.[`${port.containerPort}/${port.protocol}`] ?? [];
    assert.ok(
      bindings.some((b: { HostIp: string; HostPort: string }) =>
        b.HostPort === (port.publishedPort === 0 ? "" : String(port.publishedPort)) &&
        b.HostIp === (port.hostIp ?? "")
      ),
      `${at} port ${port.publishedPort}:${port.containerPort}`,
    );
  }
  for (const file of service.files ?? []) {
    const found = mounts.get(file.target);
    assert.ok(
      found !== undefined && found.Type === "bind" && found.ReadOnly === true,
      `${at} file ${file.target}`,
    );
  }
  if (service.healthcheck.kind === "configured") {
    assert.deepEqual(config.Healthcheck?.Test, service.healthcheck.test, `${at} healthcheck`);
  }
}

Deno.test(needs(["lab"], {
  name: "Compose corpus files deploy unchanged across a 3-Machine lab, every honoured key on each container",
  async fn(t) {
    const entries = corpus().filter((entry) => entry.lab === true);
    assert.ok(entries.length >= 4, `${entries.length} corpus entries are marked for the lab`);
    await using lab = await startLab("cc", 3);
    await machinesUp(lab, "m1", 3);
    for (const entry of entries) {
      await t.step(
        `${entry.name}: deployed as written; docker inspect and the published ports agree`,
        async () => {
          const { project } = loadCompose({ files: corpusFiles(entry), env: corpusEnv(entry) });
          const args = [
            "deploy",
            ...corpusFiles(entry).flatMap((file) => ["-f", file]),
            "-y",
            "--monitor",
            "1s",
          ];
          const started = Date.now();
          const deployed = await lab.ployz(args, { PLOYZ_RUN_DIR: `${lab.dir}/m1/run`, ...corpusEnv(entry) });
          assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
          console.log(`  ${entry.name}: deployed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
          let containers = 0;
          for (const m of ["m1", "m2", "m3"]) {
            const listed = await lab.docker(m, [
              "ps",
              "-a",
              "--filter",
              `label=ployz.project=${project.name}`,
              "--format",
              "{{.ID}}",
            ]);
            assert.equal(listed.code, 0, listed.stderr);
            const ids = listed.stdout.split("\n").filter((id) => id !== "");
            if (ids.length === 0) continue;
            const inspected = await lab.docker(m, ["inspect", ...ids]);
            assert.equal(inspected.code, 0, inspected.stderr);
            for (const c of JSON.parse(inspected.stdout) as Inspect[]) {
              const name = c.Config.Labels["ployz.service"];
              if (c.Config.Labels["ployz.slot"] === "hook") continue;
              const service = project.services[name];
              assert.ok(service !== undefined, `${m}: container of unknown Service "${name}"`);
              assertHonoured(service, c, m);
              containers++;
              // Every shipped file (secret, config, relative bind) holds the content its digest names.
              for (const file of service.files ?? []) {
                const read = await lab.docker(m, ["exec", c.Id, "cat", file.target]);
                assert.equal(read.code, 0, read.stderr);
                const digest = `sha256:${createHash("sha256").update(read.stdout).digest("hex")}`;
                assert.equal(digest, file.digest, `${m} ${name} ${file.target}`);
              }
              // Every fixed host port answers on the Machine that runs the Service (HTTP servers only).
              const http = service.command?.[0] === "httpd";
              for (const port of service.ports) {
                if (
                  port.kind !== "host" || port.publishedPort === 0 || port.protocol !== "tcp" || !http
                ) continue;
                const served = service.command?.[service.command.indexOf("-p") + 1];
                if (served !== String(port.containerPort)) continue;
                const address = port.hostIp ?? "127.0.0.1";
                const answer = await eventually(
                  30_000,
                  `${name} answers on ${m}:${port.publishedPort}`,
                  async () => {
                    // On the Machine's own network, as a client on that host; busybox wget's -T crashes, so a
                    // shell timer bounds the fetch.
                    const url = `http://${address}:${port.publishedPort}/`;
                    const got = await lab.docker(m, [
                      "run",
                      "--rm",
                      "--network",
                      "host",
                      IMAGE,
                      "sh",
                      "-c",
                      `wget -q -O - ${url} & p=$!; (sleep 5; kill $p 2>/dev/null) & wait $p`,
                    ]);
                    return got.code === 0 && got.stdout !== "" ? got.stdout : undefined;
                  },
                );
                assert.match(answer, /ployz test/);
              }
            }
          }
          const expected = Object.values(project.services).reduce(
            (sum, s) => sum + (s.mode === "global" ? 3 : s.replicas ?? 1),
            0,
          );
          assert.equal(containers, expected, `${entry.name}: containers across the lab`);
        },
      );
    }
  },
}));
