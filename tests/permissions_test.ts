// Every ployzd subcommand and the CLI, in both launch modes: an access outside the subcommand's deno.json
// permission set fails with NotCapable, and an access inside it succeeds.
import { deepEqual, equal } from "node:assert/strict";
import { join } from "node:path";
import {
  layoutFromEnv,
  permissionFlags,
  permissionSet,
  permissionSetNames,
  relocate,
  unionOf,
} from "../lib/permissions/mod.ts";
import { fixture, ROOT, run, type TempLayout, tempLayout } from "./support/spawn.ts";
import type { Probe, ProbeResult } from "./fixtures/permission_probe.ts";

interface Case {
  set: string;
  inside: (l: TempLayout) => Probe[];
  outside: (l: TempLayout) => Probe[];
  /** Refused only where Deno reads the set itself (`deny` exceptions): a Worker cannot be denied anything. */
  denied?: (l: TempLayout) => Probe[];
}

const CASES: Case[] = [
  {
    set: "serve",
    inside: (l) => [
      { op: "write", target: join(l.dataDir, "machine.json") },
      { op: "connect-unix", target: l.dockerSocket },
      // Peers' sync port on every private network a Cluster may be founded on (`machine init --subnet`).
      { op: "net-granted", target: "10.210.0.1:51000" },
      { op: "net-granted", target: "10.217.0.1:51000" },
      { op: "net-granted", target: "172.20.3.1:51000" },
      { op: "net-granted", target: "192.168.7.1:51000" },
    ],
    outside: () => [
      { op: "net-granted", target: "203.0.113.1:51000" },
      { op: "net-granted", target: "10.217.0.1:22" },
      { op: "read", target: "/etc/shadow" },
      { op: "write", target: "/etc/ployz-probe" },
      { op: "connect-tcp", target: "127.0.0.2:80" },
      // No loopback grant: the observe and Caddy admin sockets are reached through unix proxies.
      { op: "connect-tcp", target: "127.0.0.1:80" },
      // systemd only through the ployz-systemd door: no systemctl, no systemd-run, no unit file.
      { op: "run", target: "systemctl" },
      { op: "run", target: "systemd-run" },
      { op: "write", target: "/run/systemd/system/ployz-permission-probe.txt" },
    ],
  },
  {
    set: "systemd",
    inside: () => [{ op: "run", target: "systemctl" }],
    outside: (l) => [
      { op: "run", target: "/bin/true" },
      { op: "write", target: "/etc/ployz-probe" },
      { op: "read", target: join(l.dataDir, "machine.json") },
      { op: "connect-unix", target: l.dockerSocket },
      { op: "connect-tcp", target: "127.0.0.1:80" },
    ],
  },
  {
    set: "dns",
    inside: (l) => [
      { op: "read", target: join(l.runDir, "dns.json") },
      { op: "listen-udp", target: "127.0.0.1:53" },
      // Replies to container clients on any private Cluster network, at whatever port they asked from.
      { op: "net-granted", target: "10.217.1.9:40000" },
      { op: "net-granted", target: "172.20.3.9:40000" },
      { op: "net-granted", target: "192.168.7.9:40000" },
    ],
    outside: (l) => [
      { op: "net-granted", target: "203.0.113.9:40000" },
      { op: "connect-unix", target: l.dockerSocket },
      { op: "write", target: "/etc/ployz-probe" },
      { op: "read", target: join(l.dataDir, "machine.json") },
      { op: "listen-tcp", target: "127.0.0.1:8053" },
    ],
  },
  {
    set: "observe",
    inside: (l) => [
      { op: "read", target: join(l.dockerRoot, "containers", "c1", "local-logs", "container.log") },
      { op: "write", target: join(l.dataDir, "observe", "probe") },
    ],
    outside: (l) => [
      { op: "connect-unix", target: l.dockerSocket },
      { op: "write", target: "/etc/ployz-probe" },
      { op: "write", target: join(l.dataDir, "machine.json") },
      { op: "connect-tcp", target: "127.0.0.1:80" },
    ],
  },
  {
    set: "install",
    inside: (l) => [
      { op: "read", target: join(l.dataDir, "install", "source.json") },
      { op: "write", target: join(l.dataDir, "install", "attempt.json") },
      // Readiness: the new daemon's socket.
      { op: "connect-unix", target: join(l.runDir, "ployz.sock") },
    ],
    outside: (l) => [
      { op: "write", target: join(l.dataDir, "machine.json") },
      { op: "run", target: "/bin/true" },
      { op: "run", target: "sh" },
      // apt-get runs dpkg itself; the installer hashes in process.
      { op: "run", target: "dpkg" },
      { op: "run", target: "sha256sum" },
      // Only its own paths: bin/ployzd adds the release source and the artifact an invocation names.
      { op: "read", target: "/etc/hostname" },
      { op: "read", target: join(l.dataDir, "machine.json") },
      // No network but the daemon's socket: bin/ployzd adds only the release source's host:port.
      { op: "connect-unix", target: l.dockerSocket },
      { op: "connect-unix", target: join(l.runDir, "observe.sock") },
      { op: "connect-tcp", target: "10.210.1.1:51000" },
      { op: "connect-tcp", target: "169.254.169.254:80" },
      { op: "connect-tcp", target: "127.0.0.1:80" },
      { op: "connect-tcp", target: "localhost:80" },
    ],
    // Even where a named release source would cover them, never this Machine's secrets.
    denied: (l) => [
      { op: "read", target: join(l.dataDir, "keys", "sign.key") },
      { op: "read", target: join(l.dataDir, "store.db") },
      { op: "read", target: join(l.dataDir, "files", "shop", "secret.txt") },
      { op: "read", target: "/etc/shadow" },
    ],
  },
  {
    set: "install-grants",
    inside: (l) => [{ op: "read", target: join(l.dataDir, "install", "source.json") }],
    outside: (l) => [
      { op: "read", target: join(l.dataDir, "machine.json") },
      { op: "write", target: join(l.dataDir, "install", "source.json") },
      { op: "connect-unix", target: join(l.runDir, "ployz.sock") },
      { op: "connect-tcp", target: "127.0.0.1:80" },
      { op: "run", target: "/bin/true" },
    ],
  },
  {
    set: "dial-stdio",
    inside: (l) => [{ op: "connect-unix", target: join(l.runDir, "ployz.sock") }],
    outside: (l) => [
      { op: "connect-unix", target: l.dockerSocket },
      { op: "read", target: "/etc/hostname" },
    ],
  },
  {
    set: "cli",
    inside: () => [{ op: "read", target: "/etc/hostname" }],
    outside: () => [{ op: "run", target: "/bin/true" }],
  },
  {
    set: "none",
    inside: () => [],
    outside: () => [{ op: "read", target: "/etc/hostname" }, { op: "connect-tcp", target: "127.0.0.1:80" }],
  },
];

const DENO = Deno.execPath();

async function probeRun(set: string, layout: TempLayout, probe: Probe): Promise<ProbeResult> {
  const flags = permissionFlags(relocate(permissionSet(set), layoutFromEnv((k) => layout.env[k])));
  const out = await run(DENO, [
    "run",
    "--quiet",
    "--no-prompt",
    ...flags,
    fixture("permission_probe.ts"),
    probe.op,
    probe.target,
  ], layout.env);
  equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout);
}

async function probeWorker(set: string, layout: TempLayout, probe: Probe): Promise<ProbeResult> {
  // The driver holds the union of the sets, as a compiled program does, and narrows a Worker to one of them.
  const union = unionOf(
    permissionSetNames().filter((n) => n !== "lab").map((n) =>
      relocate(permissionSet(n), layoutFromEnv((k) => layout.env[k]))
    ),
  );
  const out = await run(DENO, [
    "run",
    "--quiet",
    "--no-prompt",
    "--unstable-worker-options",
    ...permissionFlags(union),
    fixture("worker_probe_driver.ts"),
    set,
    probe.op,
    probe.target,
  ], layout.env);
  equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout);
}

const MODES = { run: probeRun, worker: probeWorker };

for (const c of CASES) {
  for (const [mode, probe] of Object.entries(MODES)) {
    Deno.test(`permission set "${c.set}" (${mode} mode) allows its own accesses and refuses others`, async () => {
      await using layout = await tempLayout();
      for (const p of c.inside(layout)) {
        const result = await probe(c.set, layout, p);
        deepEqual(result, { ok: true }, `${p.op} ${p.target} should be allowed: ${JSON.stringify(result)}`);
      }
      for (const p of [...c.outside(layout), ...(mode === "run" ? c.denied?.(layout) ?? [] : [])]) {
        const result = await probe(c.set, layout, p);
        equal(result.error, "NotCapable", `${p.op} ${p.target} should be refused: ${JSON.stringify(result)}`);
      }
    });
  }
}

Deno.test("the install set reaches the Machine RPC socket the way its readiness check does", async () => {
  // Deno checks a fetch's URL host even over a unix socket: readiness names the host "ployz", never localhost,
  // whose port 80 is the Machine's own ingress.
  await using layout = await tempLayout();
  const flags = permissionFlags(relocate(permissionSet("install"), layoutFromEnv((k) => layout.env[k])));
  const out = await run(DENO, [
    "run",
    "--quiet",
    "--no-prompt",
    ...flags,
    fixture("rpc_reach_probe.ts"),
    join(layout.runDir, "ployz.sock"),
  ], layout.env);
  equal(out.code, 0, out.stderr);
  const result = JSON.parse(out.stdout);
  // The test socket accepts and hangs up: any outcome but a permission refusal.
  equal(/Requires|NotCapable/.test(result.message ?? ""), false, result.message);
});

Deno.test("every permission set in deno.json has a case here", () => {
  deepEqual(permissionSetNames().filter((n) => n !== "lab").sort(), CASES.map((c) => c.set).sort());
});

/** Runs the probe under `-P=<set>` as Deno reads it from deno.json itself: what the launchers do. */
async function probeConfig(set: string, op: string, target: string): Promise<ProbeResult> {
  const out = await run(DENO, [
    "run",
    "--quiet",
    "--no-prompt",
    "--config",
    join(ROOT, "deno.json"),
    `-P=${set}`,
    fixture("permission_probe.ts"),
    op,
    target,
  ]);
  equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout);
}

Deno.test("deno's own -P=install reading deno.json refuses the Machine's keys, Docker and the mesh", async () => {
  for (
    const [op, target] of [
      ["read", "/var/lib/ployz/keys/sign.key"],
      ["connect-unix", "/var/run/docker.sock"],
      ["connect-tcp", "10.210.0.1:51000"],
      ["connect-tcp", "127.0.0.1:80"],
    ]
  ) {
    equal((await probeConfig("install", op, target)).error, "NotCapable", `${op} ${target}`);
  }
  // Nothing but its own paths: what an operator names is added by bin/ployzd for that invocation.
  equal((await probeConfig("install", "read", "/etc/hostname")).error, "NotCapable");
  const own = await probeConfig("install", "read", "/usr/lib/ployz/release-test-key");
  equal(own.ok || own.error !== "NotCapable", true, JSON.stringify(own));
});

Deno.test("deno's own -P=dns reading deno.json refuses docker.sock and /etc writes", async () => {
  for (const [op, target] of [["connect-unix", "/var/run/docker.sock"], ["write", "/etc/ployz-probe"]]) {
    equal((await probeConfig("dns", op, target)).error, "NotCapable", `${op} ${target}`);
  }
});
