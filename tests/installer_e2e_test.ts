// The installer against real systemd (PID 1 in a container, no dockerd inside): install.sh from a local release
// source, same-version no-op, refused artifacts, preflight refusal, an upgrade that survives its client being
// killed and the daemon restarting, busy refusal, a failed activation reported without rollback, an interrupted
// worker, and identity/data bytes unchanged. Needs Docker and the image from .ci/images_systemd.sh.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { DOCKER_ENV } from "./support/docker.ts";
import {
  hostDist,
  linkTree,
  replaceFile,
  sh,
  signReleaseSums,
  SYSTEMD_IMAGE,
  SystemdMachine,
} from "./support/installer.ts";
import { ROOT, run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { eventually, sleep } from "./support/poll.ts";

const TRIPLE = Deno.build.target;

interface Release {
  version: string;
  /** What the tree's own deno.json says (a wrong one is refused by preflight). */
  reports?: string;
  /** Serve exits at once: the failed-activation case. */
  brokenServe?: boolean;
}

/** The tree's deno.json saying `version`. */
function patchConfig(text: string, version: string): string {
  return JSON.stringify({ ...JSON.parse(text), version }, null, 2) + "\n";
}

/** Builds a release source from one `deno task dist` tree: several versions, channel pointer, bad artifacts. */
async function buildSource(work: string): Promise<string> {
  const dist = join(work, "dist");
  const built = await hostDist(dist);
  const rel = join(work, "releases");
  const releases: Release[] = [
    { version: "0.1.0" },
    { version: "0.2.0" },
    { version: "0.3.0", brokenServe: true },
    { version: "0.9.0", reports: "0.9.1" },
  ];
  for (const r of releases) {
    const name = `ployz-${r.version}-${TRIPLE}`;
    const tree = join(work, "build", name);
    await Deno.mkdir(join(work, "build"), { recursive: true });
    await linkTree(built, tree);
    const configPath = join(tree, "deno.json");
    await replaceFile(configPath, patchConfig(await Deno.readTextFile(configPath), r.reports ?? r.version));
    if (r.brokenServe) {
      const servePath = join(tree, "cmd", "ployzd", "serve.ts");
      const text = await Deno.readTextFile(servePath);
      const patched = text.replace(
        "async run({ values, io }): Promise<number> {",
        'async run({ values, io }): Promise<number> {\n    if (values) throw new Error("This release cannot serve");',
      );
      ok(patched !== text, "serve.ts patch applies");
      await replaceFile(servePath, patched);
    }
    await Deno.mkdir(join(rel, r.version), { recursive: true });
    await sh(
      `tar --sort=name --owner=0 --group=0 -C '${join(work, "build")}' -cf - '${name}' | gzip -1 > '${
        join(rel, r.version, `${name}.tar.gz`)
      }'`,
    );
    await sh(`sha256sum '${name}.tar.gz' > SHA256SUMS`, join(rel, r.version));
    await Deno.remove(tree, { recursive: true });
  }
  await Deno.mkdir(join(rel, "v0"));
  await Deno.writeTextFile(join(rel, "v0", "stable"), "0.1.0\n");
  // 0.4.0: corrupt (truncated) artifact; 0.5.0: artifact missing; 0.6.0: SHA256SUMS does not list it.
  const good = join(rel, "0.2.0", `ployz-0.2.0-${TRIPLE}.tar.gz`);
  const digest = (await sh(`sha256sum '${good}'`)).split(" ")[0];
  for (const v of ["0.4.0", "0.5.0", "0.6.0"]) await Deno.mkdir(join(rel, v));
  await sh(`head -c 1000000 '${good}' > '${join(rel, "0.4.0", `ployz-0.4.0-${TRIPLE}.tar.gz`)}'`);
  await Deno.writeTextFile(join(rel, "0.4.0", "SHA256SUMS"), `${digest}  ployz-0.4.0-${TRIPLE}.tar.gz\n`);
  await Deno.writeTextFile(join(rel, "0.5.0", "SHA256SUMS"), `${digest}  ployz-0.5.0-${TRIPLE}.tar.gz\n`);
  await Deno.copyFile(good, join(rel, "0.6.0", `ployz-0.6.0-${TRIPLE}.tar.gz`));
  await Deno.writeTextFile(join(rel, "0.6.0", "SHA256SUMS"), `${digest}  something-else.tar.gz\n`);
  await signReleaseSums(rel);
  await Deno.chmod(rel, 0o755);
  return rel;
}

/** The systemd container plus reads of install attempts. */
class Machine extends SystemdMachine {
  async json(script: string): Promise<Record<string, unknown>> {
    const r = await this.exec(script);
    const line = r.stdout.trim().split("\n").pop() ?? "";
    try {
      return { ...JSON.parse(line), exit: r.code, stderr: r.stderr };
    } catch {
      throw new Error(`${script}: no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
    }
  }

  async status(id: string): Promise<Record<string, unknown>> {
    return await this.json(`ployzd install --status ${id} --json`);
  }

  async waitOutcome(id: string, timeoutMs = 240_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const record = await this.status(id);
      if (record.outcome !== undefined || Date.now() > deadline) return record;
      await sleep(1000);
    }
  }

  async servePid(): Promise<string> {
    return await this.ok("systemctl show --property=MainPID --value ployz-serve.service");
  }
}

const PRESERVED = [
  "/var/lib/ployz/machine.json",
  "/var/lib/ployz/keys/wg.key",
  "/var/lib/ployz/store.db",
  "/etc/ployz/config.yaml",
];

Deno.test(needs(["docker", `image:${SYSTEMD_IMAGE}`], {
  name:
    "installer: install, refuse, upgrade across a killed client and a daemon restart, fail without rollback",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn(t) {
    const work = await Deno.makeTempDir({ prefix: "ployz-installer-e2e-" });
    const name = `ployz-installer-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const rel = await buildSource(work);
      const m = await Machine.start(name, [
        "-v",
        `${rel}:/releases:ro`,
        "-v",
        `${join(ROOT, "install.sh")}:/install.sh:ro`,
      ]);

      let digests = "";
      await t.step(
        "install.sh installs the channel's release and the daemon answers as that version",
        async () => {
          const r = await m.exec("PLOYZ_RELEASE_SOURCE=/releases sh /install.sh --skip-prerequisites");
          equal(r.code, 0, r.stderr + r.stdout);
          match(r.stderr, /channel v0\/stable is 0\.1\.0/);
          match(r.stdout, /verified: the daemon answered as 0\.1\.0/);
          equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.1.0");
          equal(JSON.parse(await m.ok("ployzd version --json")).version, "0.1.0");
          equal(await m.ok("systemctl is-active ployz-serve.service"), "active");
          // The daemon keeps the Observe Store as its own runtime unit through the systemd door, not as a child.
          const why = async (): Promise<string> =>
            (await m.exec("journalctl -u ployz-serve.service --no-pager | grep -i observe | tail -5")).stdout;
          await eventually(60_000, "ployz-observe.service active", async () => {
            const state = (await m.exec("systemctl is-active ployz-observe.service")).stdout.trim();
            return state === "active" ? true : undefined;
          }).catch(async (error) => {
            throw new Error(`${error.message}\n${await why()}`);
          });
          match(await m.ok("head -1 /run/systemd/system/ployz-observe.service"), /runtime unit/);
          equal(await m.ok("stat -c %a /var/lib/ployz/install/attempts"), "700");
          // Identity minted by the daemon; data and config planted as an operator's would be.
          await m.ok(
            "head -c 4096 /dev/urandom > /var/lib/ployz/store.db && mkdir -p /etc/ployz && " +
              "echo 'name: m1' > /etc/ployz/config.yaml",
          );
          digests = await m.ok(`sha256sum ${PRESERVED.join(" ")}`);
        },
      );

      await t.step("installing the same version again is a no-op that says so", async () => {
        const pid = await m.servePid();
        const r = await m.exec(
          "PLOYZ_RELEASE_SOURCE=/releases sh /install.sh --version 0.1.0 --skip-prerequisites",
        );
        equal(r.code, 0, r.stderr);
        match(r.stdout, /Ployz 0\.1\.0 is already installed: nothing to do/);
        equal(await m.servePid(), pid, "the daemon was not restarted");
      });

      await t.step(
        "missing, corrupt and unlisted artifacts are refused and the installation is untouched",
        async () => {
          const pid = await m.servePid();
          const viaScript = await m.exec("PLOYZ_RELEASE_SOURCE=/releases sh /install.sh --version 0.4.0");
          equal(viaScript.code, 1);
          match(viaScript.stderr, /checksum mismatch for "ployz-0\.4\.0-.*": refusing to install it/);
          const cases: [string, string, RegExp][] = [
            [
              "0.4.0",
              "verify_checksum",
              /Refusing "ployz-0\.4\.0-.*": its SHA-256 is "[0-9a-f]{64}" but SHA256SUMS says/,
            ],
            ["0.5.0", "acquire", /Cannot find "0\.5\.0\/ployz-0\.5\.0-.*" in release source "\/releases"/],
            ["0.6.0", "verify_checksum", /Cannot verify "ployz-0\.6\.0-.*": SHA256SUMS does not list it/],
            ["0.7.0", "acquire", /Cannot find "0\.7\.0\/SHA256SUMS"/],
          ];
          for (const [version, stage, error] of cases) {
            const r = await m.json(
              `ployzd install --upgrade --version ${version} --source /releases --wait --json`,
            );
            equal(r.exit, 1, `${version}: ${r.stderr}`);
            equal(r.outcome, "failed", version);
            equal(r.stage, stage, version);
            match(String(r.error), error);
          }
          equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.1.0");
          equal(await m.ok("ls /usr/lib/ployz/releases"), "0.1.0");
          equal(await m.servePid(), pid);
          equal(await m.ok("ls /var/lib/ployz/install/staging | wc -l"), "0", "staging is cleaned up");
        },
      );

      await t.step(
        "a staged tree reporting the wrong version is refused by preflight before activation",
        async () => {
          const r = await m.json("ployzd install --upgrade --version 0.9.0 --wait --json");
          equal(r.outcome, "failed");
          equal(r.stage, "preflight");
          match(String(r.error), /it reports version "0\.9\.1", expected "0\.9\.0"/);
          equal(r.replaced, undefined);
          equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.1.0");
          equal(await m.ok("ls /usr/lib/ployz/releases"), "0.1.0");
        },
      );

      await t.step(
        "a staged release whose dns --probe cannot serve this Machine's DNS spec is refused",
        async () => {
          await m.ok("mkdir -p /run/ployz && echo '{\"format\": 999}' > /run/ployz/dns.json");
          const r = await m.json("ployzd install --upgrade --version 0.2.0 --wait --json");
          await m.ok("rm /run/ployz/dns.json");
          equal(r.outcome, "failed");
          equal(r.stage, "preflight");
          match(String(r.error), /"bin\/ployzd dns --probe" exited 1: error\[/);
          equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.1.0");
        },
      );

      let upgradeId = "";
      await t.step(
        "an upgrade survives its client being killed and the daemon restarting; busy refuses a second",
        async () => {
          const pid = await m.ok(
            "nohup ployzd install --upgrade --version 0.2.0 --request-key k1 --wait > /tmp/a.out 2>&1 & echo $!",
          );
          const deadline = Date.now() + 60_000;
          let line = "";
          while (!(line = await m.ok("cat /tmp/a.out")).includes("Accepted upgrade attempt")) {
            ok(Date.now() < deadline, `no acceptance: ${line}`);
            await sleep(200);
          }
          upgradeId = line.match(/Accepted upgrade attempt ([a-z0-9]+)/)![1];
          const busy = await m.exec("ployzd install --upgrade --version 0.2.0 --request-key k2");
          equal(busy.code, 1, busy.stdout);
          match(busy.stderr, new RegExp(`error\\[busy\\]: .*attempt "${upgradeId}"`));
          await m.ok(`kill -9 ${pid}`);
          await m.ok("systemctl restart ployz-serve.service");
          const retried = await m.json("ployzd install --upgrade --version 0.2.0 --request-key k1 --json");
          equal(retried.id, upgradeId, "a retry with the same request key finds the same attempt");
          equal(retried.existing, true);
          const done = await m.waitOutcome(upgradeId);
          equal(done.outcome, "succeeded", JSON.stringify(done));
          equal(done.target_version, "0.2.0");
          equal((done.ready as Record<string, unknown>).daemon_version, "0.2.0");
          equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.2.0");
          equal(JSON.parse(await m.ok("ployzd version --json")).version, "0.2.0");
          equal(await m.ok("ls /usr/lib/ployz/releases | tr '\\n' ' '"), "0.1.0 0.2.0");
          const ms = (a: unknown, b: unknown): number => Date.parse(String(b)) - Date.parse(String(a));
          console.log(
            `upgrade ${upgradeId}: request→verified ready ${ms(done.started_at, done.ready_at)} ms; ` +
              `serve restart→ready (management socket window) ${
                ms(done.restart_started_at, done.ready_at)
              } ms`,
          );
        },
      );

      await t.step("identity, configuration and data bytes are unchanged by the upgrade", async () => {
        equal(await m.ok(`sha256sum ${PRESERVED.join(" ")}`), digests);
      });

      await t.step(
        "a failed activation after replacement is reported with stage and journal hint, no rollback",
        async () => {
          const r = await m.json("ployzd install --upgrade --version 0.3.0 --ready-timeout 20 --wait --json");
          equal(r.outcome, "failed", JSON.stringify(r));
          equal(r.stage, "verify_ready");
          equal(r.replaced, true);
          match(String(r.error), /did not answer as version "0\.3\.0"/);
          match(
            String(r.note),
            /No automatic rollback: "current" points at 0\.3\.0; the previous release is kept/,
          );
          equal(r.journal_hint, `journalctl -u ployz-upgrade-${r.id}`);
          equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.3.0", "no rollback");
          equal(await m.ok("ls /usr/lib/ployz/releases | tr '\\n' ' '"), "0.1.0 0.2.0 0.3.0");
          match(await m.ok(`journalctl -u ployz-upgrade-${r.id} --no-pager`), /failed at stage verify_ready/);
          equal(await m.ok(`sha256sum ${PRESERVED.join(" ")}`), digests);
        },
      );

      await t.step("a worker killed without a result reads as interrupted", async () => {
        const r = await m.json("ployzd install --upgrade --version 0.2.0 --request-key k4 --json");
        await m.ok(`systemctl kill --signal=SIGKILL ployz-upgrade-${r.id}.service`);
        const seen = await m.waitOutcome(String(r.id), 60_000);
        ok(seen.outcome === "interrupted", JSON.stringify(seen));
        match(String(seen.error), /ended without a result at stage/);
        equal(await m.ok("readlink /usr/lib/ployz/current"), "releases/0.3.0");
        deepEqual((await m.status(String(r.id))).outcome, "interrupted", "the verdict is recorded");
      });
    } finally {
      await run("docker", ["rm", "-f", name], DOCKER_ENV);
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
}));
