// Provisioning over SSH and http(s) release sources, against real systemd (PID 1 in containers running sshd).
//
// Two Machines of ployz-test/systemd:2: the Entry Machine installs with the production bootstrap line, install.sh
// fetched with curl from an http server on its own loopback, which also serves the release source (channel, a
// checksum refusal, a missing version, and an upgrade whose artifact `ployzd install` downloads over http); then it
// founds a Cluster. The second is a fresh host reached only over SSH with a key this test made: the real
// `ployz machine add --ssh root@<ip>` from this host refuses clearly (ssh failure, non-root user, a missing
// release, an install that fails on the host), then probes, acquires, transfers, installs and sees serve ready
// through `ssh HOST ployzd dial-stdio`, and the join runs over that transport. A second add skips the install.
//
// Not exercised: the join reaching `participating`. Both containers' ployzd use the dev dockerd through its
// socket, so each Machine Gateway (10.219.x.1 on its Docker bridge) lives in that dockerd's network namespace,
// not in the container's: the store listener cannot bind it, and routes with it as source are refused. The join
// is checked up to the joiner holding the Entry Machine's Cluster id, phase `joining`; reaching `participating` is
// covered by the lab tests, where every Machine has its own dockerd. Passwordless-sudo users are unit-tested only.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { PLOYZ_VERSION } from "../lib/cli/mod.ts";
import { permissionFlags, permissionSet } from "../lib/permissions/mod.ts";
import { connectMachine, type MachineClient, stdioFetch } from "../lib/rpc/mod.ts";
import { DOCKER_ENV, DOCKER_SOCKET, randomSubnet } from "./support/docker.ts";
import {
  buildReleaseSource,
  sh,
  signReleaseSums,
  SYSTEMD_IMAGE,
  SystemdMachine,
  TEST_KEY_ENV,
} from "./support/installer.ts";
import { ROOT, run, type RunResult } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { sleep } from "./support/poll.ts";

const TRIPLE = Deno.build.target;
const RUN = crypto.randomUUID().slice(0, 8);
const HTTP_PORT = 8787;
const HTTP = `http://127.0.0.1:${HTTP_PORT}`;

/**
 * The Cluster's addresses. Its Machines' networks live on the shared dockerd, where another test's network on an
 * overlapping subnet makes Docker refuse one of them ("Pool overlaps"): a prefix no other test uses there.
 */
const PREFIX = "10.219";

/** The operator CLI's version: what `machine add` installs unless told otherwise. */
const CLI = PLOYZ_VERSION;
/** Its staged tree reports another version: preflight on the host refuses it. */
const BAD = "0.0.1";
/** Its artifact is truncated: install.sh refuses its checksum. */
const CORRUPT = "0.0.2";
/** A good release the Entry Machine upgrades to over http. */
const UP = "0.0.3";

/** A static file server for the release source, run by the host's deno inside the container, on its loopback. */
const HTTP_SERVER = `
const [root, port] = Deno.args;
Deno.serve({ hostname: "127.0.0.1", port: Number(port), onListen() {} }, async (request) => {
  const path = decodeURIComponent(new URL(request.url).pathname);
  console.log(request.method + " " + path);
  if (path.split("/").includes("..")) return new Response("bad path", { status: 400 });
  try {
    const file = await Deno.open(root + path);
    if (!(await file.stat()).isFile) { file.close(); return new Response("not a file", { status: 404 }); }
    return new Response(file.readable);
  } catch {
    return new Response("not found", { status: 404 });
  }
});
`;

function container(role: string): string[] {
  return [
    // The mesh: wireguard-go needs a tun device and NET_ADMIN; the Machine's mesh address is IPv6 too.
    "--cap-add",
    "NET_ADMIN",
    "--device",
    "/dev/net/tun",
    "--sysctl",
    "net.ipv6.conf.all.disable_ipv6=0",
    "--hostname",
    `ssh-${role}-${RUN}`,
    // The daemon manages the dev dockerd (no dockerd runs inside).
    "-v",
    `${DOCKER_SOCKET}:/var/run/docker.sock`,
  ];
}

/** The daemon's Docker network gets a name of this run: set before serve first starts, as an operator would. */
async function serveDropIn(m: SystemdMachine, network: string): Promise<void> {
  await m.ok(
    "mkdir -p /etc/systemd/system/ployz-serve.service.d && printf '%s\\n' '[Service]' " +
      `'Environment=PLOYZ_DOCKER_NETWORK=${network} PLOYZ_DOCKER_LABELS=ployz.test=${RUN}' ` +
      "> /etc/systemd/system/ployz-serve.service.d/test.conf",
  );
}

/** The last line of stderr: the one-line refusal. */
function refusalLine(r: RunResult): string {
  return r.stderr.trim().split("\n").at(-1) ?? "";
}

Deno.test(needs(["docker", "command:ssh", "path:/dev/net/tun", `image:${SYSTEMD_IMAGE}`], {
  name:
    "machine add --ssh provisions a fresh host through install.sh and joins over dial-stdio; http sources",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn(t) {
    const work = await Deno.makeTempDir({ prefix: "ployz-installer-ssh-" });
    const hostRun = join(work, "run");
    await Deno.mkdir(hostRun, { mode: 0o755 });
    const entry = new SystemdMachine(`ployz-ssh-entry-${RUN}`);
    const host = new SystemdMachine(`ployz-ssh-host-${RUN}`);
    const networks = [`ployz-ssh-e-${RUN}`, `ployz-ssh-h-${RUN}`];
    const clients: MachineClient[] = [];
    try {
      const rel = await buildReleaseSource(work, [CLI, BAD, UP], (config, version) => {
        if (version === BAD) config.version = `${BAD}-other`;
      });
      const good = join(rel, CLI, `ployz-${CLI}-${TRIPLE}.tar.gz`);
      const digest = (await sh(`sha256sum '${good}'`)).split(" ")[0];
      await Deno.mkdir(join(rel, CORRUPT));
      await sh(`head -c 1000000 '${good}' > '${join(rel, CORRUPT, `ployz-${CORRUPT}-${TRIPLE}.tar.gz`)}'`);
      await Deno.writeTextFile(
        join(rel, CORRUPT, "SHA256SUMS"),
        `${digest}  ployz-${CORRUPT}-${TRIPLE}.tar.gz\n`,
      );
      await signReleaseSums(rel);
      await sh(`chmod -R a+rX '${rel}'`);
      await Deno.writeTextFile(join(work, "http_server.ts"), HTTP_SERVER);
      // The operator's key and ssh config: this test's own, never the user's.
      const key = join(work, "id_ed25519");
      await sh(`ssh-keygen -q -t ed25519 -N '' -C ployz-ssh-test -f '${key}'`);
      const sshConfig = join(work, "ssh_config");
      await Deno.writeTextFile(
        sshConfig,
        [
          "Host *",
          `  IdentityFile ${key}`,
          "  IdentitiesOnly yes",
          "  StrictHostKeyChecking no",
          "  UserKnownHostsFile /dev/null",
          "  LogLevel ERROR",
          "",
        ].join("\n"),
      );
      const cliEnv = {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        PLOYZ_RUN_DIR: hostRun,
        PLOYZ_CONFIG_DIR: join(work, "config"),
        PLOYZ_SSH_CONFIG: sshConfig,
        NO_COLOR: "1",
        ...TEST_KEY_ENV,
      };
      const ployz = (...args: string[]): Promise<RunResult> =>
        run(Deno.execPath(), [
          "run",
          "--quiet",
          ...permissionFlags(permissionSet("cli")),
          join(ROOT, "cmd", "ployz.ts"),
          ...args,
        ], cliEnv);

      await Promise.all([
        SystemdMachine.start(entry.name, [
          ...container("entry"),
          "-v",
          `${rel}:/releases:ro`,
          "-v",
          `${Deno.execPath()}:/opt/deno:ro`,
          "-v",
          `${join(work, "http_server.ts")}:/http_server.ts:ro`,
          // The CLI's local Machine (the Entry Machine) is this container's daemon.
          "-v",
          `${hostRun}:/run/ployz`,
        ]),
        SystemdMachine.start(host.name, container("host")),
      ]);
      await serveDropIn(entry, networks[0]);
      await serveDropIn(host, networks[1]);
      const ip = (await run(
        "docker",
        ["inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", host.name],
        DOCKER_ENV,
      )).stdout.trim();
      match(ip, /^\d+\.\d+\.\d+\.\d+$/);
      const dest = `root@${ip}`;
      await sh(
        `docker exec -i ${host.name} sh -c 'umask 077; mkdir -p /root/.ssh && cat > /root/.ssh/authorized_keys' < '${key}.pub'`,
      );

      await t.step("install.sh and ployzd install fetch from an http release source", async () => {
        await entry.ok(
          `nohup /opt/deno run --allow-net=127.0.0.1:${HTTP_PORT} --allow-read=/releases /http_server.ts ` +
            `/releases ${HTTP_PORT} > /tmp/http.log 2>&1 &`,
        );
        const deadline = Date.now() + 30_000;
        while ((await entry.exec(`curl -fsS ${HTTP}/v0/stable`)).stdout.trim() !== CLI) {
          ok(Date.now() < deadline, `the http source did not answer: ${await entry.ok("cat /tmp/http.log")}`);
          await sleep(300);
        }
        // The production bootstrap line, against this source.
        const r = await entry.exec(
          `curl -fsSL ${HTTP}/install.sh | PLOYZ_RELEASE_SOURCE=${HTTP} sh -s -- --skip-prerequisites`,
        );
        equal(r.code, 0, r.stderr + r.stdout);
        match(r.stderr, new RegExp(`channel v0/stable is ${CLI.replaceAll(".", "\\.")}`));
        match(r.stdout, new RegExp(`verified: the daemon answered as ${CLI.replaceAll(".", "\\.")}`));
        deepEqual(JSON.parse(await entry.ok("cat /var/lib/ployz/install/source.json")), {
          source: HTTP,
          channel: "stable",
        });

        const corrupt = await entry.exec(
          `curl -fsSL ${HTTP}/install.sh | PLOYZ_RELEASE_SOURCE=${HTTP} sh -s -- --version ${CORRUPT}`,
        );
        equal(corrupt.code, 1, corrupt.stdout);
        match(corrupt.stderr, /checksum mismatch for "ployz-0\.0\.2-.*": refusing to install it/);

        const missing = JSON.parse(
          (await entry.exec("ployzd install --upgrade --version 0.0.9 --wait --json")).stdout.trim(),
        );
        equal(missing.outcome, "failed");
        equal(missing.stage, "acquire");
        match(
          missing.error,
          /Cannot find "0\.0\.9\/SHA256SUMS" in release source "http:\/\/127\.0\.0\.1:8787"/,
        );

        const up = await entry.exec(`ployzd install --upgrade --version ${UP} --wait --json`);
        const record = JSON.parse(up.stdout.trim().split("\n").at(-1)!);
        equal(record.outcome, "succeeded", up.stdout + up.stderr);
        equal(record.ready.daemon_version, UP);
        equal(record.source, HTTP);
        const log = await entry.ok("cat /tmp/http.log");
        match(
          log,
          new RegExp(`GET /${UP}/ployz-${UP}-${TRIPLE}\\.tar\\.gz`),
          "ployzd downloaded the artifact",
        );
        equal(await entry.ok("readlink /usr/lib/ployz/current"), `releases/${UP}`);
      });

      let clusterId = "";
      await t.step("the Entry Machine founds a Cluster", async () => {
        const r = await ployz("machine", "init", "--subnet", randomSubnet(PREFIX), "--json");
        if (r.code !== 0) {
          // Under --json the refusal is on stdout; the daemon's side of it is in its journal.
          const journal = await entry.exec("journalctl -u ployz-serve --no-pager -n 40");
          equal(r.code, 0, `${r.stderr}${r.stdout}\nployz-serve's journal:\n${journal.stdout}`);
        }
        clusterId = JSON.parse(r.stdout.trim()).machine.cluster_id;
        ok(typeof clusterId === "string" && clusterId !== "", r.stdout);
      });

      await t.step("refusals are one line with a code, naming the stage and the host's words", async () => {
        const noKey = await ployz("machine", "add", "--ssh", `nobody@${ip}`, "--release-source", rel);
        equal(noKey.code, 1, noKey.stderr);
        match(
          refusalLine(noKey),
          new RegExp(
            `^error\\[unavailable\\]: At stage probe: Cannot reach "nobody@${ip}" over SSH: .*Permission denied`,
          ),
        );

        await host.ok(
          "useradd -m op && mkdir -p -m 700 /home/op/.ssh && cp /root/.ssh/authorized_keys /home/op/.ssh/ && " +
            "chown -R op /home/op/.ssh",
        );
        const user = await ployz("machine", "add", "--ssh", `op@${ip}`, "--release-source", rel);
        equal(user.code, 1, user.stderr);
        match(
          refusalLine(user),
          /^error\[invalid_argument\]: At stage probe: Cannot provision "op@.*": the SSH user is not root \(uid \d+\) and "sudo -n" is not allowed/,
        );

        const absent = await ployz("machine", "add", dest, "--release-source", rel, "--version", "0.0.9");
        equal(absent.code, 1, absent.stderr);
        match(
          refusalLine(absent),
          /^error\[not_found\]: At stage acquire: Cannot acquire release 0\.0\.9: Cannot find "0\.0\.9\/SHA256SUMS"/,
        );
        ok(!absent.stderr.includes("transfer:"), "nothing was sent");

        const failed = await ployz(
          "machine",
          "add",
          dest,
          "--release-source",
          rel,
          "--version",
          BAD,
          "--skip-prerequisites",
        );
        equal(failed.code, 1, failed.stderr);
        match(failed.stderr, /^transfer: sent install\.sh, SHA256SUMS and ployz-0\.0\.1-/m);
        match(
          refusalLine(failed),
          /^error\[[a-z_]+\]: At stage install: Cannot install Ployz 0\.0\.1 on "root@.*": install\.sh exited 1; the host said: .*reports version "0\.0\.1-other", expected "0\.0\.1"/,
        );
        for (const r of [noKey, user, absent, failed]) {
          ok(!/^\s+at /m.test(r.stderr), `no stack trace: ${r.stderr}`);
        }
        equal(
          await host.ok("ls /usr/local/bin/ployzd /usr/lib/ployz/current 2>/dev/null | wc -l"),
          "0",
          "nothing was installed",
        );
        equal(
          await host.ok("ls -d /tmp/ployz-provision.* 2>/dev/null | wc -l"),
          "0",
          "the transfer was removed",
        );
      });

      await t.step(
        "a fresh host is provisioned over SSH, serve answers through dial-stdio, the join runs",
        async () => {
          const r = await ployz(
            "machine",
            "add",
            "--ssh",
            dest,
            "--release-source",
            rel,
            "--skip-prerequisites",
            "--timeout",
            "8",
          );
          const v = CLI.replaceAll(".", "\\.");
          match(
            r.stderr,
            new RegExp(`^probe: "${dest}" is Linux x86_64 .*SSH user root; no ployzd installed`, "m"),
          );
          match(
            r.stderr,
            new RegExp(
              `^acquire: release ${v} for ${TRIPLE} from ".*": signature and checksum verified here`,
              "m",
            ),
          );
          const sent = Number(
            /^transfer: sent install\.sh, SHA256SUMS and \S+ \((\d+) bytes/m.exec(r.stderr)?.[1],
          );
          ok(sent > 1_000_000, r.stderr);
          match(r.stderr, /^install: {3}host: ployzd install: stage verify_checksum$/m);
          match(r.stderr, new RegExp(`^install: {3}host: verified: the daemon answered as ${v}`, "m"));
          const ready = new RegExp(
            `^serve_ready: ployzd serve answers through "ssh ${dest} ployzd dial-stdio" as ${v} \\((\\d+) ms\\); ` +
              `probe → serve ready took ([0-9.]+) s, (\\d+) bytes sent$`,
            "m",
          ).exec(r.stderr);
          ok(ready, r.stderr);
          equal(Number(ready[3]), sent);
          // The join itself, over the same transport.
          match(r.stderr, new RegExp(`^allocated ${PREFIX.replaceAll(".", "\\.")}\\.\\d+\\.0/24 for `, "m"));
          match(r.stderr, /is joining; waiting for it to catch up/);
          // See the header: participating cannot be reached with the Machine Gateway outside the container.
          equal(r.code, 1, r.stderr);
          match(refusalLine(r), /^error\[unavailable\]: Machine ".*" did not report participating in time$/);
          const ms = (re: RegExp): string => re.exec(r.stderr)?.[1] ?? "?";
          console.log(
            `provision over SSH: probe → serve ready ${ready[2]} s (probe ${
              ms(/^probe: .*\((\d+) ms\)$/m)
            } ms, ` +
              `acquire ${ms(/^acquire: .*\((\d+) ms\)$/m)} ms, transfer ${
                ms(/^transfer: .* in (\d+) ms$/m)
              } ms, ` +
              `install ${ms(/^install: done in (\d+) ms$/m)} ms, serve_ready ${
                ready[1]
              } ms); ${sent} bytes sent ` +
              `(${(sent / 1024 / 1024).toFixed(1)} MiB)`,
          );

          const joiner = connectMachine({
            label: `ssh ${dest}`,
            fetch: stdioFetch({
              cmd: "ssh",
              args: ["-F", sshConfig, "-o", "BatchMode=yes", dest, "ployzd", "dial-stdio"],
            }),
          });
          clients.push(joiner);
          equal((await joiner.describeContract()).daemon_version, CLI);
          const record = (await joiner.status()).machine;
          equal(record.cluster_id, clusterId, "the provisioned Machine took the Entry Machine's Cluster");
          equal(record.phase, "joining");
          equal(await host.ok("systemctl is-active ployz-serve.service"), "active");
          equal(await host.ok("readlink /usr/lib/ployz/current"), `releases/${CLI}`);
          // The source was a directory on the operator's machine: the host records none for later upgrades.
          deepEqual(JSON.parse(await host.ok("cat /var/lib/ployz/install/source.json")), {});
          const upgrade = await host.exec(`ployzd install --upgrade --version ${UP}`);
          equal(upgrade.code, 1, upgrade.stdout);
          match(
            upgrade.stderr,
            /error\[invalid_argument\]: Cannot upgrade: this Machine has no release source recorded/,
          );
          equal(await host.ok("ls -d /tmp/ployz-provision.* 2>/dev/null | wc -l"), "0");
        },
      );

      await t.step(
        "a host already running the version is not reinstalled; another version is refused",
        async () => {
          const pid = await host.ok("systemctl show --property=MainPID --value ployz-serve.service");
          const r = await ployz("machine", "add", dest, "--release-source", rel, "--timeout", "3", "--json");
          const out = JSON.parse(r.stdout.trim().split("\n")[0]);
          equal(out.provision.action, "already_installed");
          equal(out.provision.bytes_sent, 0);
          equal(out.provision.daemon_version, CLI);
          equal(out["already_member"], true);
          equal(await host.ok("systemctl show --property=MainPID --value ployz-serve.service"), pid);
          const human = await ployz("machine", "add", dest, "--release-source", rel, "--version", UP);
          equal(human.code, 1);
          match(
            refusalLine(human),
            /^error\[conflict\]: At stage probe: Cannot provision "root@.*" with 0\.0\.3: it already runs ployzd .*"ployz machine upgrade" changes/,
          );
        },
      );
    } finally {
      for (const c of clients) c.close();
      await entry.remove();
      await host.remove();
      for (const n of networks) await run("docker", ["network", "rm", n], DOCKER_ENV);
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
}));

Deno.test("machine add: provisioning flags are checked before anything is contacted", async () => {
  const work = await Deno.makeTempDir({ prefix: "ployz-installer-ssh-cli-" });
  try {
    const env = {
      PLOYZ_RUN_DIR: join(work, "run"),
      PLOYZ_CONFIG_DIR: join(work, "config"),
      // Any ssh run would fail loudly against this.
      PLOYZ_SSH_CONFIG: join(work, "missing_ssh_config"),
    };
    const cases: [string[], RegExp][] = [
      [["root@a", "--ssh", "root@b"], /Give the SSH destination once/],
      [["root@a", "--version", "0.1.0", "--channel", "stable"], /Give --version or --channel, not both/],
      [["--socket", "/x.sock", "--release-source", "/r"], /--release-source provisions over SSH/],
      [["--ssh", "root@a;id"], /Invalid SSH destination "root@a;id"/],
      [
        ["root@a", "--install-prerequisites", "--skip-prerequisites"],
        /Give at most one of --install-prerequisites/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await run(Deno.execPath(), [
        "run",
        "--quiet",
        ...permissionFlags(permissionSet("cli")),
        join(ROOT, "cmd", "ployz.ts"),
        "machine",
        "add",
        ...args,
      ], env);
      equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      match(r.stderr.split("\n")[0], new RegExp(`^error\\[invalid_argument\\]: ${message.source}`));
    }
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
