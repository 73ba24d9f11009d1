// Every Compose key Ployz applies, checked on a real container: load a Compose file, build the container spec the
// planner would, create it on the test dockerd and read `docker inspect` back.
import assert from "node:assert/strict";
import { loadCompose, serviceContainerSpec } from "../lib/deploy/mod.ts";
import { dockerTest, IMAGE } from "./support/docker.ts";

const COMPOSE = `
services:
  app:
    image: ${IMAGE}
    command: ["sleep", "300"]
    cpus: 0.5
    mem_limit: 64m
    mem_reservation: 32m
    shm_size: 16m
    pids_limit: 100
    ulimits:
      nofile: {soft: 1024, hard: 2048}
      nproc: 512
    privileged: false
    cap_add: [NET_ADMIN]
    cap_drop: [MKNOD]
    sysctls:
      net.ipv4.ip_unprivileged_port_start: "80"
    tmpfs: ["/scratch:size=8m,mode=1777"]
    volumes:
      - type: tmpfs
        target: /cache
        tmpfs: {size: 4m}
      - /anon/data
    init: true
    hostname: app-host
    extra_hosts: ["db.internal:10.9.8.7"]
    tty: true
    stdin_open: true
    read_only: true
    security_opt: ["no-new-privileges:true"]
    devices: ["/dev/null:/dev/ployz-null:r"]
    stop_signal: SIGINT
    stop_grace_period: 3s
    working_dir: /tmp
    user: "0:0"
    labels: {com.example.role: api}
    ports: ["127.0.0.1::80"]
    logging:
      driver: local
      options: {max-size: 5m}
`;

dockerTest("every honoured Compose key is on the container docker inspect shows", async (s) => {
  const { project } = loadCompose({ path: "/proj/compose.yaml", text: COMPOSE, env: {} });
  const service = project.services.app;
  const planned = serviceContainerSpec(project, service, { deploymentId: `dep-${s.id}`, slot: "1" });
  const base = s.spec("app");
  // The test scope names the container and its network; everything else is what the planner built.
  const spec = { ...planned, name: base.name, creationKey: base.creationKey, network: undefined };
  const made = await s.engine.createContainer(spec);
  const raw = await s.raw.getContainer(made.id).inspect();
  const host = raw.HostConfig;
  assert.equal(host.NanoCpus, 500_000_000);
  assert.equal(host.Memory, 64 * 1024 * 1024);
  assert.equal(host.MemoryReservation, 32 * 1024 * 1024);
  assert.equal(host.ShmSize, 16 * 1024 * 1024);
  assert.equal(host.PidsLimit, 100);
  assert.deepEqual(
    [...host.Ulimits].sort((a: { Name: string }, b: { Name: string }) => a.Name.localeCompare(b.Name)),
    [{ Name: "nofile", Soft: 1024, Hard: 2048 }, { Name: "nproc", Soft: 512, Hard: 512 }],
  );
  assert.equal(host.Privileged, false);
  assert.deepEqual(host.CapAdd, ["NET_ADMIN"]);
  assert.deepEqual(host.CapDrop, ["MKNOD"]);
  assert.deepEqual(host.Sysctls, { "net.ipv4.ip_unprivileged_port_start": "80" });
  assert.equal(host.Init, true);
  assert.deepEqual(host.ExtraHosts, ["db.internal:10.9.8.7"]);
  assert.equal(host.ReadonlyRootfs, true);
  assert.deepEqual(host.SecurityOpt, ["no-new-privileges:true"]);
  assert.deepEqual(host.Devices, [
    { PathOnHost: "/dev/null", PathInContainer: "/dev/ployz-null", CgroupPermissions: "r" },
  ]);
  assert.deepEqual(host.LogConfig.Type, "local");
  assert.equal(host.LogConfig.Config["max-size"], "5m");
  assert.deepEqual(host.PortBindings, { "80/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] });
  const mounts = Object.fromEntries(
    host.Mounts.map((m: { Target: string }) => [m.Target, m]),
  ) as Record<
    string,
    { Type: string; Source?: string; TmpfsOptions?: { SizeBytes?: number; Mode?: number } }
  >;
  assert.equal(mounts["/scratch"].Type, "tmpfs");
  assert.deepEqual(mounts["/scratch"].TmpfsOptions, { SizeBytes: 8 * 1024 * 1024, Mode: 0o1777 });
  assert.deepEqual(mounts["/cache"].TmpfsOptions, { SizeBytes: 4 * 1024 * 1024 });
  assert.equal(mounts["/anon/data"].Type, "volume");
  assert.equal(mounts["/anon/data"].Source ?? "", "");
  const config = raw.Config;
  assert.equal(config.Hostname, "app-host");
  assert.equal(config.Tty, true);
  assert.equal(config.OpenStdin, true);
  assert.equal(config.StopSignal, "SIGINT");
  assert.equal(config.StopTimeout, 3);
  assert.equal(config.WorkingDir, "/tmp");
  assert.equal(config.User, "0:0");
  assert.equal(config.Labels["com.example.role"], "api");
  assert.deepEqual(config.Cmd, ["sleep", "300"]);

  // The anonymous volume is the container's own: removing the container removes it.
  await s.engine.startContainer(made.id);
  const running = await s.raw.getContainer(made.id).inspect();
  const anonymous = running.Mounts.find((m: { Destination: string }) => m.Destination === "/anon/data").Name;
  assert.ok(anonymous !== undefined && anonymous !== "");
  await s.engine.removeContainer(made.id, { force: true });
  const left = await s.raw.listVolumes({ filters: { name: [anonymous] } });
  assert.deepEqual((left.Volumes ?? []).map((v: { Name: string }) => v.Name), []);
});

dockerTest(
  "gpus and device requests reach HostConfig.DeviceRequests; another log driver is applied",
  async (s) => {
    const text = `
services:
  gpu:
    image: ${IMAGE}
    gpus: all
    logging: {driver: none}
    deploy:
      resources:
        reservations:
          devices:
            - {driver: nvidia, count: 1, capabilities: [gpu, utility]}
`;
    const { project } = loadCompose({ path: "/proj/compose.yaml", text, env: {} });
    const service = project.services.gpu;
    const planned = serviceContainerSpec(project, service, { deploymentId: `dep-${s.id}`, slot: "1" });
    const base = s.spec("gpu");
    // Created, not started: the test machine has no GPU, and Docker checks device requests only at start.
    const made = await s.engine.createContainer({
      ...planned,
      name: base.name,
      creationKey: base.creationKey,
      network: undefined,
    });
    const raw = await s.raw.getContainer(made.id).inspect();
    assert.deepEqual(raw.HostConfig.DeviceRequests, [
      { Driver: "", Count: -1, DeviceIDs: null, Capabilities: [["gpu"]], Options: null },
      { Driver: "nvidia", Count: 1, DeviceIDs: null, Capabilities: [["gpu", "utility"]], Options: null },
    ]);
    assert.equal(raw.HostConfig.LogConfig.Type, "none");
  },
);
