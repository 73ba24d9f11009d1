// Upgrades over Machine RPC and `ployz machine upgrade`, against real systemd (PID 1 in a container) whose daemon
// manages the dev dockerd through its bind-mounted socket, so an application container of this Machine runs for
// real: the CLI is killed once the attempt is accepted, mutations and a second upgrade are refused busy, the
// same command run again finds the same attempt and reports it succeeded with the verified version, the app
// answers HTTP throughout and is never restarted. The installed ployz-observe unit, reading the dockerd's data
// root and the host's /proc and cgroups through its own read-only mounts, shows real CPU and memory figures for a
// busy container in `ployz top`, never a gap; the upgrade restarts it once, onto the new release. Prints the
// figures: request → verified ready, management downtime, application downtime. Needs Docker and the images
// from .ci/images.sh and .ci/images_systemd.sh.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { permissionFlags, permissionSet } from "../lib/permissions/mod.ts";
import { connectMachine, type MachineClient, RpcError } from "../lib/rpc/mod.ts";
import { DOCKER_ENV, DOCKER_SOCKET, randomSubnet } from "./support/docker.ts";
import { upstreamResolver } from "./support/dns.ts";
import { digLoop, type DigTally, dnsSlots, switchFigures, switchTimes } from "./support/dns_switch.ts";
import { buildReleaseSource, SYSTEMD_IMAGE, SystemdMachine } from "./support/installer.ts";
import { killedAt, ROOT, run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { eventually, sleep } from "./support/poll.ts";

const APP_IMAGE = "ployz-test/busybox:1";
const RUN = crypto.randomUUID().slice(0, 8);
const NETWORK = `ployz-upg-${RUN}`;
const UPSTREAM = "127.0.0.53";
/** The CLI's line once the Machine holds the attempt: "found" when a retried request found it. */
const ACCEPTED = /(?:accepted|found) upgrade attempt ([a-z0-9]+) to 0\.2\.0/;
/**
 * Where dig asks from: an address in the Cluster network (10.210.0.0/16), as a container's would be; the dns
 * permission set lets Internal DNS answer in the private ranges a Cluster network may use (and port 53 anywhere).
 */
const CLIENT = `10.210.${1 + Math.floor(Math.random() * 254)}.9`;

/**
 * What the daemon needs beyond deno.json's serve set to take upgrade requests here: reading the test's release
 * source. It reaches systemd through the ployz-systemd door alone.
 */
function grantUpgrades(config: Record<string, unknown>): void {
  const sets = config.permissions as Record<string, Record<string, unknown>>;
  const serve = sets.serve;
  serve.read = [...new Set([...(serve.read as string[]), "/usr/lib/ployz", "/releases"])];
}

async function refusal(call: () => Promise<unknown>, deadlineMs: number): Promise<RpcError> {
  const deadline = Date.now() + deadlineMs;
  while (true) {
    try {
      await call();
      throw new Error("the call was not refused");
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      // The daemon may be restarting: ask again.
      if (error.code !== "unavailable" || Date.now() > deadline) return error;
      await sleep(200);
    }
  }
}

/** Probes `probe` every `everyMs` until stopped; returns the longest stretch it failed. */
function prober(probe: () => Promise<void>, everyMs: number): { stop(): Promise<ProbeStats> } {
  let running = true;
  const stats: ProbeStats = { ok: 0, failed: 0, longestOutageMs: 0 };
  const loop = (async () => {
    let downSince: number | undefined;
    while (running) {
      const at = Date.now();
      try {
        await probe();
        stats.ok++;
        if (downSince !== undefined) stats.longestOutageMs = Math.max(stats.longestOutageMs, at - downSince);
        downSince = undefined;
      } catch {
        stats.failed++;
        downSince ??= at;
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    if (downSince !== undefined) {
      stats.longestOutageMs = Math.max(stats.longestOutageMs, Date.now() - downSince);
    }
  })();
  return {
    async stop(): Promise<ProbeStats> {
      running = false;
      await loop;
      return stats;
    },
  };
}

const FORWARDED = { name: "fwd.upg-test", address: "192.0.2.7" };

type MetricValue = { avg: number } | { sum: number } | { gap: string };

interface TopJson {
  machines: {
    services: { project: string; service: string; values: Record<string, MetricValue> | null }[];
  }[];
}

/** A figure of `ployz top --json`, or undefined for a gap or a missing value. */
function figure(value: MetricValue | undefined): number | undefined {
  if (value === undefined || "gap" in value) return undefined;
  return "avg" in value ? value.avg : value.sum;
}

interface ProbeStats {
  ok: number;
  failed: number;
  longestOutageMs: number;
}

Deno.test(needs(["docker", `image:${SYSTEMD_IMAGE}`, `image:${APP_IMAGE}`], {
  name: "machine upgrade over RPC: severed client, same attempt, busy interlock, app serving throughout",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn(t) {
    const work = await Deno.makeTempDir({ prefix: "ployz-upgrade-rpc-e2e-" });
    const hostRun = join(work, "run");
    await Deno.mkdir(hostRun, { mode: 0o755 });
    const machine = new SystemdMachine(`ployz-upgrade-rpc-${RUN}`);
    const socketPath = join(hostRun, "ployz.sock");
    const cliEnv = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      PLOYZ_RUN_DIR: hostRun,
      PLOYZ_CONFIG_DIR: join(work, "config"),
      NO_COLOR: "1",
    };
    const cliArgs = [
      "run",
      "--quiet",
      ...permissionFlags(permissionSet("cli")),
      join(ROOT, "cmd", "ployz.ts"),
    ];
    const client: MachineClient = connectMachine({ socketPath });
    let upstream: Deno.ChildProcess | undefined;
    try {
      const dockerRoot = (await run("docker", ["info", "--format", "{{.DockerRootDir}}"], DOCKER_ENV)).stdout
        .trim();
      ok(dockerRoot.startsWith("/"), `docker info names no data root: "${dockerRoot}"`);
      const rel = await buildReleaseSource(work, ["0.1.0", "0.2.0"], grantUpgrades);
      await SystemdMachine.start(machine.name, [
        "-v",
        `${rel}:/releases:ro`,
        "-v",
        `${join(ROOT, "install.sh")}:/install.sh:ro`,
        // The daemon manages the dev dockerd, so the application container is real; its socket is reachable here.
        "-v",
        `${DOCKER_SOCKET}:/var/run/docker.sock`,
        "-v",
        `${hostRun}:/run/ployz`,
        // Where an installed Machine's Observe Store finds the containers: Docker's data root, read-only.
        "-v",
        `${dockerRoot}:/var/lib/docker:ro`,
      ]);

      await t.step("install 0.1.0; the daemon serves the upgrade capabilities", async () => {
        await machine.ok(
          "mkdir -p /etc/systemd/system/ployz-serve.service.d && printf '%s\\n' '[Service]' " +
            `'Environment=PLOYZ_WG_INTERFACE=none PLOYZ_DOCKER_NETWORK=${NETWORK} PLOYZ_DOCKER_LABELS=ployz.test=${RUN}' ` +
            // Internal DNS forwards to a dnsmasq inside the Machine, never to this host's resolvers.
            `'Environment=PLOYZ_DNS_UPSTREAMS=${UPSTREAM}' ` +
            "> /etc/systemd/system/ployz-serve.service.d/test.conf",
        );
        const r = await machine.exec("PLOYZ_RELEASE_SOURCE=/releases sh /install.sh --skip-prerequisites");
        equal(r.code, 0, r.stderr + r.stdout);
        const contract = await client.describeContract();
        equal(contract.daemon_version, "0.1.0");
        ok(contract.capabilities.includes("ployz.machine.upgrade.v1"));
        ok(contract.capabilities.includes("ployz.machine.upgrade_status.v1"));
      });

      await t.step("a remote caller cannot name a release source; status of an unknown attempt", async () => {
        using http = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
        const raw = await fetch("http://localhost/rpc/ployz.machine.upgrade.v1", {
          method: "POST",
          body: JSON.stringify({
            "protocol_major": 1,
            version: "0.2.0",
            "request_key": "k",
            source: "http://elsewhere/",
          }),
          client: http,
        }).then(async (response) => ({ status: response.status, body: await response.json() }));
        equal(raw.body.error.code, "invalid_argument");
        match(raw.body.error.message, /field "source": unknown field/);
        const missing = await refusal(() => client.upgradeStatus({ id: "zzzzzzzz" }), 0);
        equal(missing.code, "not_found");
        equal(missing.details.capability, "ployz.machine.upgrade_status.v1");
      });

      const spec = {
        name: `ployz-upg-${RUN}-web`,
        creationKey: `ck-upg-${RUN}`,
        project: "upg",
        service: "web",
        deployment: `dep-${RUN}`,
        slot: "0",
        image: APP_IMAGE,
        cmd: ["httpd", "-f", "-p", "80", "-h", "/www"],
        network: { name: NETWORK },
        stopGraceSeconds: 1,
      };
      let appUrl = "";
      let appStartedAt = "";
      let appId = "";
      const subnet = randomSubnet("10.217");
      const gateway = subnet.replace(/\.0\/24$/, ".1");
      // The Machine's own network namespace: Internal DNS binds the Machine Gateway there (the bridge itself
      // lives on this host's dockerd), dnsmasq stands in for the upstream resolver, and dig asks from there.
      const pid = (await run("docker", ["inspect", "--format", "{{.State.Pid}}", machine.name], DOCKER_ENV))
        .stdout
        .trim();
      ok(/^[1-9][0-9]*$/.test(pid), `no pid for ${machine.name}: "${pid}"`);
      const inMachine = ["--net=/proc/" + pid + "/ns/net"];
      for (const address of [gateway, CLIENT]) {
        equal(
          (await run("nsenter", [...inMachine, "ip", "addr", "add", `${address}/32`, "dev", "lo"])).code,
          0,
        );
      }
      upstream = upstreamResolver(inMachine[0], UPSTREAM, FORWARDED, join(work, "dnsmasq.pid"));
      let names: Record<string, string> = {};
      await t.step("the Machine runs an application container on its Docker", async () => {
        await client.init({ "cluster_name": "upg", subnet });
        // Busy in a bounded way, for the Observe Store's figures: a short CPU burst every second.
        await client.ensureContainer({
          spec: {
            ...spec,
            name: `ployz-upg-${RUN}-busy`,
            creationKey: `ck-upg-busy-${RUN}`,
            service: "busy",
            cmd: ["sh", "-c", "while :; do seq 1 50000 > /dev/null; sleep 1; done"],
          },
          start: true,
        });
        const made = await client.ensureContainer({ spec, start: true });
        appId = made.container.id;
        const inspected = JSON.parse(
          (await run("docker", ["inspect", appId], DOCKER_ENV)).stdout,
        )[0];
        appStartedAt = inspected.State.StartedAt;
        appUrl = `http://${inspected.NetworkSettings.Networks[NETWORK].IPAddress}/`;
        names = {
          "web.upg.internal": inspected.NetworkSettings.Networks[NETWORK].IPAddress,
          [FORWARDED.name]: FORWARDED.address,
        };
        const deadline = Date.now() + 20_000;
        while (true) {
          const answer = await fetch(appUrl, { signal: AbortSignal.timeout(2_000) }).then(
            (r) => r.text(),
            () => "",
          );
          if (answer.length > 0) break;
          ok(Date.now() < deadline, "the app did not answer");
          await sleep(200);
        }
      });

      await t.step(
        "the installed ployz-observe unit shows real CPU, memory and disk figures for a busy container",
        async () => {
          let last = "";
          const values = await eventually(60_000, "ployz top figures for upg/busy", async () => {
            const top = await run(Deno.execPath(), [...cliArgs, "top", "--json"], cliEnv);
            last = top.stdout + top.stderr;
            if (top.code !== 0) return undefined;
            const busy = (JSON.parse(top.stdout) as TopJson).machines.flatMap((m) => m.services)
              .find((s) => s.project === "upg" && s.service === "busy");
            const cpu = figure(busy?.values?.cpu);
            return cpu !== undefined && cpu > 0 ? busy!.values! : undefined;
          }, 2_000).catch((error) => {
            throw new Error(`${error instanceof Error ? error.message : error}; last ployz top: ${last}`);
          });
          ok(
            (figure(values.memory) ?? 0) > 0,
            `memory is a figure above zero, not ${JSON.stringify(values.memory)}`,
          );
          // Disk comes from the cgroups as CPU and memory do. Network is read from the container's own
          // /proc/<pid>/net/dev, and this container runs on the host's dockerd, its pid outside this Machine's
          // pid namespace: here it is a gap (the lab and the example prove network figures).
          for (const m of ["disk_read", "disk_write"]) {
            ok(figure(values[m]) !== undefined, `${m} is a figure, not ${JSON.stringify(values[m])}`);
          }
          match(await machine.ok("systemctl is-active ployz-observe.service"), /^active$/);
          console.log(`ployz-observe unit: busy container figures ${JSON.stringify(values)}`);
        },
      );

      await t.step(
        "Internal DNS runs as ployz-dns@a and answers a Service name and a forwarded name",
        async () => {
          let last: string[] = [];
          await eventually(30_000, "Internal DNS answers in the Machine", async () => {
            const probe = digLoop(pid, gateway, CLIENT, names, join(work, "dig-ready"));
            await sleep(300);
            const tally = await probe.stop();
            await Deno.remove(join(work, "dig-ready"));
            last = tally.lost;
            return tally.sent > 0 && tally.lost.length === 0 ? tally : undefined;
          }, 500).catch(async (error) => {
            const journal = await machine.exec(
              "journalctl -u 'ployz-dns*' -u ployz-serve.service --no-pager -n 40; ip -4 addr; cat /run/ployz/dns.json",
            );
            throw new Error(`${error.message}; lost: ${last.slice(0, 4).join(" | ")}\n${journal.stdout}`);
          });
          deepEqual(await dnsSlots(machine), { a: "active", b: "inactive", legacy: "inactive" });
        },
      );

      // The Observe Store's starts are counted from here: the upgrade's own.
      const upgradeSince = await machine.ok("date +%s");
      const dns = digLoop(pid, gateway, CLIENT, names, join(work, "dig-upgrade"));
      const app = prober(async () => {
        const response = await fetch(appUrl, { signal: AbortSignal.timeout(2_000) });
        await response.text();
        if (!response.ok) throw new Error(`status ${response.status}`);
      }, 100);
      const management = prober(async () => {
        using probe = connectMachine({ socketPath });
        await probe.describeContract({ signal: AbortSignal.timeout(1_000) });
      }, 100);
      let attemptId = "";
      let appStats: ProbeStats | undefined;
      let managementStats: ProbeStats | undefined;
      let dnsStats: DigTally | undefined;
      try {
        await t.step("the CLI is killed once the attempt is accepted; the attempt goes on", async () => {
          const { seen } = await killedAt(
            Deno.execPath(),
            [...cliArgs, "machine", "upgrade", "--version", "0.2.0"],
            cliEnv,
            ACCEPTED,
          );
          attemptId = seen.match(ACCEPTED)?.[1] ?? "";
          ok(attemptId !== "", `no acceptance: ${seen}`);
          // "found": the first request outlived its call bound on a loaded host and the retry, with the same
          // request key, found the attempt that request had started.
          if (/found upgrade attempt/.test(seen)) console.log(`accepted on a retry: ${seen.trim()}`);
        });

        await t.step("during the attempt, mutations and a second upgrade are refused busy", async () => {
          using during = connectMachine({ socketPath });
          const refused = await refusal(() => during.ensureContainer({ spec, start: true }), 60_000);
          equal(refused.code, "busy", refused.message);
          equal(refused.details.attempt_id, attemptId);
          equal(refused.details.capability, "ployz.container.ensure.v1");
          match(refused.message, new RegExp(`upgrade attempt "${attemptId}" to 0\\.2\\.0 is running`));
          const second = await refusal(
            () => during.upgradeMachine({ version: "0.1.0", "request_key": `other-${RUN}` }),
            60_000,
          );
          equal(second.code, "busy", second.message);
          equal(second.details.attempt_id, attemptId);
        });

        await t.step("the same command again finds the same attempt and reports it succeeded", async () => {
          const again = await run(
            Deno.execPath(),
            [...cliArgs, "machine", "upgrade", "--version", "0.2.0", "--json"],
            cliEnv,
          );
          equal(again.code, 0, again.stderr + again.stdout);
          const result = JSON.parse(again.stdout.trim().split("\n").pop()!);
          equal(result.ok, true);
          equal(result.machines.length, 1);
          const m = result.machines[0];
          equal(m.result, "succeeded", JSON.stringify(m));
          equal(m.attempt_id, attemptId, "the receipt's request key found the same attempt");
          equal(m.existing, true);
          equal(m.from_version === "0.1.0" || m.from_version === "0.2.0", true);
          equal(m.target_version, "0.2.0");
          equal(m.observed_version, "0.2.0");
          equal(m.ready.daemon_version, "0.2.0");
          // A new connection: the daemon behind the old one restarted.
          using after = connectMachine({ socketPath });
          const status = await after.upgradeStatus({ id: attemptId });
          equal(status.attempt.outcome, "succeeded");
          equal(status.attempt.ready?.daemon_version, "0.2.0");
          equal((await after.describeContract()).daemon_version, "0.2.0");
          const ms = (a: unknown, b: unknown): number => Date.parse(String(b)) - Date.parse(String(a));
          console.log(
            `upgrade ${attemptId}: request → verified ready ${
              ms(status.attempt.started_at, status.attempt.ready_at)
            } ms; serve restart → ready ${ms(status.attempt.restart_started_at, status.attempt.ready_at)} ms`,
          );
        });

        await t.step(
          "the new daemon moved DNS onto 0.2.0 in ployz-dns@b, then stopped ployz-dns@a",
          async () => {
            await eventually(60_000, "ployz-dns@b serving, ployz-dns@a stopped", async () => {
              const slots = await dnsSlots(machine);
              return slots.a === "inactive" && slots.b === "active" ? slots : undefined;
            }, 500);
            match(
              await machine.ok("systemctl cat ployz-dns@b.service | grep '^ExecStart='"),
              /\/releases\/0\.2\.0\/cmd\/ployzd\.ts dns$/,
            );
            equal(await machine.ok("ls /run/systemd/system | grep -c '^ployz-dns' || true"), "1");
            // The new binary's probe ran before it started serving.
            match(
              await machine.ok("journalctl -u ployz-dns@b.service --no-pager -o cat"),
              /Can serve the spec "\/run\/ployz\/dns\.json"[^\n]*\n(.*\n)*.*Serving spec/,
            );
            // TCP moved too (SO_REUSEPORT needs both slots to run as the same user).
            const tcp = await run("nsenter", [
              ...inMachine,
              "dig",
              "-b",
              CLIENT,
              `@${gateway}`,
              "+tcp",
              "+tries=1",
              "+time=2",
              "+short",
              "web.upg.internal",
            ]);
            equal(tcp.stdout.trim(), names["web.upg.internal"], tcp.stdout + tcp.stderr);
          },
        );

        // Checked once DNS has moved: the new daemon ensured the Observe Store's unit at its start, before
        // that.
        await t.step("the Observe Store restarted once, onto 0.2.0, its unit naming no release", async () => {
          match(
            await machine.ok("grep '^ExecStart=' /run/systemd/system/ployz-observe.service"),
            /^ExecStart=\/usr\/lib\/ployz\/current\/deno run .*\/usr\/lib\/ployz\/current\/.* observe$/,
          );
          const journal = await machine.ok(
            `journalctl -u ployz-observe.service --since @${upgradeSince} --no-pager -o short-precise`,
          );
          equal(journal.match(/ Started ployz-observe\.service/g)?.length, 1, journal);
          match(
            await machine.ok("readlink /proc/$(systemctl show -p MainPID --value ployz-observe.service)/exe"),
            /\/usr\/lib\/ployz\/releases\/0\.2\.0\/deno$/,
          );
        });
      } finally {
        appStats = await app.stop();
        managementStats = await management.stop();
        dnsStats = await dns.stop();
      }

      await t.step("the app answered throughout and was never restarted; mutations work again", async () => {
        console.log(
          `application: ${appStats!.ok} HTTP answers, ${appStats!.failed} failures, longest outage ${
            appStats!.longestOutageMs
          } ms; management socket: ${managementStats!.failed} unanswered probes, longest window ${
            managementStats!.longestOutageMs
          } ms`,
        );
        const times = await switchTimes(machine, "ployz-dns@b.service", "ployz-dns@a.service");
        console.log(
          `internal dns across the upgrade: ${dnsStats!.sent} queries sent, ${dnsStats!.answered} answered, ${
            dnsStats!.lost.length
          } lost; ${switchFigures(times)}`,
        );
        deepEqual(dnsStats!.lost, [], "DNS queries lost across the upgrade-driven restart");
        // The loop ran across the whole switch: a query ended before the new unit started, one after the old
        // one stopped (how many fit in between depends on the host's speed).
        ok(times !== undefined, "the DNS switch's start and end are not in the journal");
        const { firstMs, lastMs } = dnsStats!;
        ok(
          firstMs !== undefined && lastMs !== undefined && firstMs < times.started && lastMs > times.stopped,
          `the dig loop (${firstMs}-${lastMs} ms) missed the switch (${times.started}-${times.stopped} ms)`,
        );
        equal(appStats!.failed, 0, "application downtime");
        ok(appStats!.ok > 20, `only ${appStats!.ok} probes ran`);
        const inspected = JSON.parse((await run("docker", ["inspect", appId], DOCKER_ENV)).stdout)[0];
        equal(inspected.State.StartedAt, appStartedAt, "the app container was not restarted");
        equal(inspected.State.Running, true);
        using fresh = connectMachine({ socketPath });
        const after = await fresh.ensureContainer({ spec, start: true });
        deepEqual([after.created, after.started, after.container.id], [false, false, appId]);
      });

      // A Machine still on the single ployz-dns.service of earlier releases moves to the pair, twice: once by the
      // daemon's own start (what an upgraded Machine's new serve does), once by two switches at once (a daemon
      // starting while a retry runs through the door), where the switch lock makes the second wait, so it
      // cannot stop ployz-dns.service while @a is still starting.
      const moves: [string, string][] = [
        ["the daemon's start", "systemctl restart ployz-serve.service"],
        [
          "two switches at once",
          "ployz-systemd ensure dns & first=$!; ployz-systemd ensure dns; second=$?; wait $first; " +
          'test "$?$second" = 00',
        ],
      ];
      for (const [how, command] of moves) {
        await t.step(
          `a Machine still on the single ployz-dns.service moves to the pair by ${how}, losing no query`,
          async () => {
            // An earlier release's state: one ployz-dns.service runtime unit serving the same spec, no slot.
            const slot = (await dnsSlots(machine)).a === "active"
              ? "ployz-dns@a.service"
              : "ployz-dns@b.service";
            await machine.ok(
              `cp /run/systemd/system/${slot} /run/systemd/system/ployz-dns.service && ` +
                "systemctl daemon-reload && systemctl start ployz-dns.service",
            );
            await eventually(30_000, "ployz-dns.service serving", async () => {
              const said = await machine.exec(
                "journalctl -u ployz-dns.service --no-pager -o cat _SYSTEMD_INVOCATION_ID=" +
                  "$(systemctl show --property=InvocationID --value ployz-dns.service) | grep -c 'Serving spec'",
              );
              return said.stdout.trim() !== "0" && said.stdout.trim() !== "" ? true : undefined;
            }, 300);
            await machine.ok(
              `systemctl stop ${slot} && rm /run/systemd/system/${slot} && systemctl daemon-reload`,
            );
            const loop = digLoop(pid, gateway, CLIENT, names, join(work, `dig-migrate-${slot[10]}`));
            let tally: DigTally;
            try {
              await sleep(500);
              await machine.ok(command);
              await eventually(60_000, "ployz-dns@a serving and ployz-dns.service gone", async () => {
                const slots = await dnsSlots(machine);
                const files = await machine.ok("ls /run/systemd/system | grep '^ployz-dns' || true");
                return slots.a === "active" && slots.b === "inactive" && slots.legacy === "inactive" &&
                    files === "ployz-dns@a.service"
                  ? true
                  : undefined;
              }, 300);
              await sleep(500);
            } finally {
              tally = await loop.stop();
            }
            const figures = switchFigures(
              await switchTimes(machine, "ployz-dns@a.service", "ployz-dns.service"),
            );
            console.log(
              `internal dns, ployz-dns.service → ployz-dns@a by ${how}: ${tally.sent} sent, ` +
                `${tally.answered} answered, ${tally.lost.length} lost; ${figures}`,
            );
            deepEqual(tally.lost, [], `DNS queries lost moving off the single unit by ${how}`);
          },
        );
      }

      await t.step("control: stopping and starting the DNS unit, as before, does lose queries", async () => {
        const loop = digLoop(pid, gateway, CLIENT, names, join(work, "dig-control"));
        let tally: DigTally;
        try {
          await sleep(500);
          await machine.ok("systemctl restart ployz-dns@a.service");
          await eventually(30_000, "DNS answering again", async () => {
            const r = await run("nsenter", [
              ...inMachine,
              "dig",
              "-b",
              CLIENT,
              `@${gateway}`,
              "+tries=1",
              "+time=1",
              "+short",
              FORWARDED.name,
            ]);
            return r.stdout.trim() === FORWARDED.address ? true : undefined;
          }, 200);
        } finally {
          tally = await loop.stop();
        }
        console.log(
          `internal dns control, stop-then-start: ${tally.sent} sent, ${tally.answered} answered, ${tally.lost.length} lost (${
            tally.lost.slice(0, 2).join(" | ")
          })`,
        );
        ok(
          tally.lost.length > 0,
          "a stop-then-start restart should lose queries, or the loop cannot see a gap",
        );
      });
    } finally {
      client.close();
      if (upstream !== undefined) {
        upstream.kill("SIGKILL");
        await upstream.status;
      }
      await machine.remove();
      const filters = ["--filter", `label=ployz.test=${RUN}`];
      const ids = (await run("docker", ["ps", "-aq", ...filters], DOCKER_ENV)).stdout.split("\n").filter((
        s,
      ) => s);
      if (ids.length > 0) await run("docker", ["rm", "-f", ...ids], DOCKER_ENV);
      await run("docker", ["network", "rm", NETWORK], DOCKER_ENV);
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
}));
