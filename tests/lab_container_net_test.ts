// Cross-Machine container traffic on a 3-Machine lab whose dockerd run Docker's default networking (iptables
// management and masquerade on), in both host states: IP forwarding off until Docker turned it on, so FORWARD's
// policy is DROP (a fresh Debian host with docker.io), and forwarding on before dockerd started (policy ACCEPT). A Service per Machine answers with its mark and the
// caller's address; every container reaches every other Machine's container by address and by
// `svc.project.internal` with its own source address; Caddy on each Machine reaches the replicas on the others; every
// container reaches a listener in the lab's underlay (outside the mesh) through its host's masquerade. All of it is
// checked again after a firewall reload on m1 (put back within one mesh tick, the sync port closed again), a dockerd
// restart on m2 and a ployzd restart on m3. Last, a `ployz` network made the old way (masquerade on) is reported
// with the fix, and the fix works.
import assert from "node:assert/strict";
import { basename, join } from "node:path";
import { buildCaddyImage } from "./support/caddy.ts";
import { DOCKER_SOCKET } from "./support/docker.ts";
import { type Lab, machinesUp, type ProjectReplica, projectReplicas, startLab } from "./support/lab.ts";
import { eventually } from "./support/poll.ts";
import { run, type RunResult } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { whoProject } from "./support/web_service.ts";
const MACHINES = ["m1", "m2", "m3"];
const TICK_MS = 2000;
const UNDERLAY = { address: "192.0.2.1", port: 8099 };

/** A Service per Machine: busybox httpd with a CGI answering `<mark> <caller address>`, routed by Caddy. */
function compose(): string {
  return whoProject("cnet", MACHINES, (service) => ({
    "x-ports": [`${service}.cnet.test:80/http`],
    healthcheck: {
      test: ["CMD", "wget", "-q", "-O-", "http://127.0.0.1/"],
      interval: "1s",
      // A loaded 2-core host running four labs took over 2 s to exec a probe.
      timeout: "5s",
      retries: 3,
    },
  }));
}

interface Replica extends ProjectReplica {
  service: string;
}

/** Each Machine's one cnet container, with the Service it belongs to (w1 on m1, …). */
async function replicas(lab: Lab): Promise<Replica[]> {
  return (await projectReplicas(lab, MACHINES, "cnet")).map((r) => ({
    ...r,
    service: `w${r.machine.slice(1)}`,
  }));
}

/** `docker exec` bounded from outside: the image's busybox wget crashes on its own `-T`. */
function execIn(lab: Lab, m: string, container: string, argv: string[], seconds = 8): Promise<RunResult> {
  const socket = `unix://${join(lab.dir, m, "docker.sock")}`;
  return run("timeout", ["-s", "KILL", String(seconds), "docker", "-H", socket, "exec", container, ...argv]);
}

/** busybox httpd's REMOTE_ADDR, `[::ffff:10.210.0.2]`, as a plain IPv4 address. */
function plainAddress(text: string): string {
  return text.replace(/^\[?(::ffff:)?/, "").replace(/\]$/, "");
}

/** `<mark> <caller>` with the caller as a plain IPv4 address. */
function answer(body: string): string {
  const [mark, caller] = body.trim().split(" ");
  return caller === undefined ? body.trim() : `${mark} ${plainAddress(caller)}`;
}

function subnetOf(address: string): string {
  return address.split(".").slice(0, 3).join(".");
}

/** Everything the test proves about traffic, as one list of failures (empty when all holds). */
async function trafficFailures(lab: Lab, ns: (m: string) => string): Promise<string[]> {
  const all = await replicas(lab);
  const failures: string[] = [];
  const fetchIn = async (from: Replica, url: string): Promise<string> => {
    const r = await execIn(lab, from.machine, from.container, ["wget", "-q", "-O-", url]);
    return r.code === 0 ? answer(r.stdout) : `failed (${r.code}): ${r.stderr.trim()}`;
  };
  await Promise.all(all.flatMap((from) =>
    all.filter((to) => to !== from).flatMap((to) => [
      // By address and by name, with the caller's own address as the source.
      (async () => {
        const got = await fetchIn(from, `http://${to.address}/cgi-bin/who`);
        const want = `${to.service} ${from.address}`;
        if (got !== want) failures.push(`${from.machine} -> ${to.address}: "${got}", want "${want}"`);
      })(),
      (async () => {
        const got = await fetchIn(from, `http://${to.service}.cnet.internal/cgi-bin/who`);
        const want = `${to.service} ${from.address}`;
        if (got !== want) {
          failures.push(`${from.machine} -> ${to.service}.cnet.internal: "${got}", want "${want}"`);
        }
      })(),
      // Caddy on `from`'s Machine to the replica on `to`'s; its source is on from's Machine Subnet.
      (async () => {
        const r = await run("nsenter", [
          `--net=${ns(from.machine)}`,
          "--",
          "curl",
          "-sS",
          "-m",
          "5",
          "-H",
          `Host: ${to.service}.cnet.test`,
          "http://127.0.0.1/cgi-bin/who",
        ]);
        const [mark, source] = answer(r.stdout).split(" ");
        if (r.code !== 0 || mark !== to.service || subnetOf(source ?? "") !== subnetOf(from.address)) {
          failures.push(`Caddy on ${from.machine} -> ${to.service}: "${r.stdout.trim()}" ${r.stderr.trim()}`);
        }
      })(),
    ])
  ));
  // Outside the mesh: the underlay, through the host's masquerade.
  await Promise.all(all.map(async (from) => {
    const got = await fetchIn(from, `http://${UNDERLAY.address}:${UNDERLAY.port}/`);
    if (got !== "underlay") failures.push(`${from.machine} -> underlay: "${got}"`);
  }));
  return failures;
}

/**
 * For each Service name that failed to resolve: what each Machine's Internal DNS answers for it, the replicas its
 * dns.json lists, and the Service's container rows and the sync state in each Machine's store, so a failure names
 * which Machine's view is stale.
 */
async function nameDiagnosis(lab: Lab, ns: (m: string) => string, failures: string[]): Promise<string[]> {
  const names = [...new Set(failures.flatMap((f) => f.match(/ -> (w\d\.cnet\.internal):/)?.[1] ?? []))];
  if (names.length === 0) return [];
  const all = await replicas(lab).catch(() => []);
  const lines: string[] = [];
  const sql = async (m: string, query: string): Promise<string> => {
    const r = await run("sqlite3", ["-readonly", join(lab.dir, m, "ployz", "store.db"), query]);
    return (r.stdout + r.stderr).trim();
  };
  for (const name of names) {
    const service = name.split(".")[0];
    for (const m of MACHINES) {
      const gateway = all.find((r) => r.machine === m);
      const dig = gateway === undefined
        ? { stdout: "no container to find the gateway" }
        : await run("nsenter", [
          `--net=${ns(m)}`,
          "--",
          "dig",
          "+tries=1",
          "+time=3",
          `@${subnetOf(gateway.address)}.1`,
          name,
          "A",
        ]);
      const answer = dig.stdout.split("\n").filter((l) => /status:|Query time|^[^;].*\sA\s/.test(l)).join(
        " | ",
      );
      const spec = await Deno.readTextFile(join(lab.dir, m, "run", "dns.json")).then(
        (text) =>
          JSON.stringify(JSON.parse(text).services.find((s: { service: string }) => s.service === service)),
        (error) => String(error),
      );
      lines.push(`${m}: DNS answers ${name}: ${answer}`);
      lines.push(`${m}: dns.json lists ${service}: ${spec}`);
      lines.push(
        `${m}: store rows of ${service}: ${await sql(
          m,
          `SELECT c.key, c.deleted, c.hlc, json_extract(l.body, '$.state'), json_extract(l.body, '$.health'), ` +
            `json_extract(l.body, '$.addresses'), json_extract(l.body, '$.stopping') FROM containers c ` +
            `LEFT JOIN changes l ON l.site = c.site AND l.version = c.version WHERE c.f_service = '${service}'`,
        )}`,
      );
      const log = await Deno.readTextFile(join(lab.dir, m, "ployzd.log")).catch((error) => String(error));
      const said = log.split("\n").filter((line) => /dns|serving|sync/i.test(line)).slice(-8);
      lines.push(`${m}: ployzd.log's last DNS, serving and sync lines: ${JSON.stringify(said)}`);
      lines.push(
        `${m}: store sites (site|contiguous|max): ${
          (await sql(m, "SELECT site, contiguous, max FROM sites")).replaceAll("\n", " ")
        }`,
      );
    }
    // The failing callers asked again through their own resolver (Docker's, which forwards to Internal DNS), timed.
    for (const from of all.filter((r) => failures.some((f) => f.startsWith(`${r.machine} -> ${name}:`)))) {
      const asked = Date.now();
      const r = await execIn(lab, from.machine, from.container, ["nslookup", name]);
      const said = `${r.stdout}${r.stderr}`.trim().replaceAll("\n", " | ");
      lines.push(
        `${from.machine}'s container asks for ${name}: (${r.code}, ${Date.now() - asked} ms) ${said}`,
      );
    }
    // What each Machine's Docker shows now, asked through m3.
    const ps = await lab.on("m3", ["ps", "cnet", "--all-machines", "--json"]);
    const shown = ps.code !== 0 ? ps.stderr.trim() : JSON.stringify(
      (JSON.parse(ps.stdout).machines as { machine_name: string; containers: Record<string, unknown>[] }[])
        .flatMap((m) =>
          m.containers.filter((c) => c.service === service).map((c) => ({
            machine: m.machine_name,
            id: String(c.id).slice(0, 12),
            state: c.state,
            health: c.health,
          }))
        ),
    );
    lines.push(`ployz ps on m3 shows ${service}: ${shown}`);
  }
  const ls = await lab.on("m3", ["machine", "ls"]);
  lines.push(`ployz machine ls on m3:\n${ls.stdout.trim()} ${ls.stderr.trim()}`);
  return lines;
}

async function allTraffic(lab: Lab, ns: (m: string) => string, when: string): Promise<void> {
  const started = Date.now();
  let last: string[] = [];
  // How many attempts each path failed in, so a failure tells a path that never worked from a loaded host's
  // scattered misses.
  let attempts = 0;
  const failedIn = new Map<string, number>();
  await eventually(90_000, `all container traffic ${when}`, async () => {
    last = await trafficFailures(lab, ns).catch((error) => [String(error)]);
    attempts++;
    for (const path of new Set(last.map((f) => f.split(":")[0]))) {
      failedIn.set(path, (failedIn.get(path) ?? 0) + 1);
    }
    return last.length === 0 ? true : undefined;
  }, 1000).catch(async (error) => {
    const counts = [...failedIn].map(([path, n]) => `${path}: failed in ${n} of ${attempts} attempts`);
    const diagnosis = await nameDiagnosis(lab, ns, last).catch((e) => [`no diagnosis: ${e}`]);
    throw new Error(`${error}\n${[...last, ...counts, ...diagnosis].join("\n")}`);
  });
  const misses = [...failedIn].map(([path, n]) => `${path} (${n})`).join(", ");
  console.log(
    `all container traffic ${when}: settled after ${((Date.now() - started) / 1000).toFixed(1)} s, ` +
      `attempt ${attempts}${misses === "" ? "" : `; failed before: ${misses}`}`,
  );
}

/** Checks each Machine's nat and filter tables: ployz's rules, and no Docker MASQUERADE for the Machine Subnet. */
async function checkRules(lab: Lab, ns: (m: string) => string, forwarding: "on" | "off"): Promise<void> {
  for (const r of await replicas(lab)) {
    const ipt = (args: string[]): Promise<RunResult> =>
      run("nsenter", [`--net=${ns(r.machine)}`, "--", "iptables", "-w", ...args]);
    const post = (await ipt(["-t", "nat", "-S", "POSTROUTING"])).stdout;
    assert.equal(
      post.split("\n").find((l) => l.startsWith("-A")),
      "-A POSTROUTING -j PLOYZ-POSTROUTING",
      post,
    );
    assert.doesNotMatch(post, new RegExp(`-s ${subnetOf(r.address)}\\.0/24 .*MASQUERADE`), post);
    // Docker sets DROP only where it had to turn forwarding on itself.
    const policy = forwarding === "off" ? "DROP" : "ACCEPT";
    assert.match((await ipt(["-S", "FORWARD"])).stdout, new RegExp(`^-P FORWARD ${policy}$`, "m"));
    assert.match((await ipt(["-S", "DOCKER-USER"])).stdout, /-A DOCKER-USER -j PLOYZ-FORWARD/);
  }
}

for (const forwarding of ["off", "on"] as const) {
  Deno.test(needs(["lab"], {
    name:
      `containers across 3 Machines under Docker's default networking, IP forwarding ${forwarding} before ` +
      "dockerd: address, name, Caddy, outside",
    sanitizeResources: false,
    sanitizeOps: false,
    async fn(t) {
      await buildCaddyImage(DOCKER_SOCKET);
      await using lab = await startLab("cnet", 3, {
        env: { PLOYZ_MESH_TICK_MS: String(TICK_MS), PLOYZ_INGRESS_RESCAN_SECONDS: "5" },
        upArgs: [
          "--forwarding",
          forwarding,
          "--image",
          "ployz-test/busybox:1",
          "--image",
          "ployz-system/caddy:2",
        ],
      });
      const name = basename(lab.dir).replace(/^plz-/, "").replace("-", "");
      const ns = (m: string): string => `/run/netns/${name}-${m.slice(1)}`;
      const inNs = (m: string, argv: string[]): Promise<RunResult> =>
        run("nsenter", [`--net=${ns(m)}`, "--", ...argv]);
      const www = join(lab.dir, "underlay-www");
      await Deno.mkdir(www, { recursive: true });
      await Deno.writeTextFile(join(www, "index.html"), "underlay\n");
      const underlay = new Deno.Command("nsenter", {
        args: [
          `--net=/run/netns/${name}-u`,
          "--",
          "busybox",
          "httpd",
          "-f",
          "-p",
          `${UNDERLAY.address}:${UNDERLAY.port}`,
          "-h",
          www,
        ],
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).spawn();
      try {
        await machinesUp(lab, "m1", 3);
        await lab.deploy("m1", "cnet.yaml", compose());

        await t.step("every path works, with the callers' own addresses", async () => {
          await allTraffic(lab, ns, "after the Deploy");
          await checkRules(lab, ns, forwarding);
        });

        await t.step(
          "a firewall reload on m1 is undone within one tick; the sync port stays closed",
          async () => {
            const [r1] = await replicas(lab);
            const gateway = `${subnetOf(r1.address)}.1`;
            // What a reload from a saved rules file does to ployz's and Docker's jumps.
            for (const args of [["-F", "INPUT"], ["-F", "DOCKER-USER"], ["-t", "nat", "-F", "POSTROUTING"]]) {
              assert.equal((await inNs("m1", ["iptables", "-w", ...args])).code, 0);
            }
            assert.equal((await inNs("m1", ["ip6tables", "-w", "-F", "INPUT"])).code, 0);
            // Timed from the last flush: on a loaded host the four flushes may span two passes, each of which
            // puts back what was gone when it ran.
            const flushed = Date.now();
            const back = await eventually(TICK_MS * 3, "the INPUT jumps back", async () => {
              const v4 = await inNs("m1", ["iptables", "-w", "-C", "INPUT", "-j", "PLOYZ-INPUT"]);
              const v6 = await inNs("m1", ["ip6tables", "-w", "-C", "INPUT", "-j", "PLOYZ-INPUT"]);
              return v4.code === 0 && v6.code === 0 ? Date.now() - flushed : undefined;
            }, 50);
            console.log(`firewall reload on m1: INPUT jumps back after ${back} ms (tick ${TICK_MS} ms)`);
            assert.ok(
              back <= TICK_MS + 1500,
              `put back after ${back} ms, more than one tick (${TICK_MS} ms)`,
            );
            // The pass logs once both families are back, a moment after the last insert the loop above saw.
            await eventually(5_000, "the log names both INPUT jumps put back", async () => {
              const log = await Deno.readTextFile(join(lab.dir, "m1", "ployzd.log"));
              if (
                /mesh: firewall: put back INPUT jump \(IPv4\)/.test(log) &&
                /mesh: firewall: put back (INPUT jump \(IPv4\), )?INPUT jump \(IPv6\)/.test(log)
              ) return true;
              const said = log.split("\n").filter((line) => /firewall|listen/.test(line));
              throw new Error(`the log's firewall lines: ${JSON.stringify(said.slice(-10))}`);
            }, 50);
            // A container on the Machine's own bridge is not on the mesh: the sync port drops it.
            // Dropped, not refused: the connection hangs until the outer timeout kills it.
            const probe = await execIn(lab, "m1", r1.container, [
              "wget",
              "-q",
              "-O-",
              `http://${gateway}:51000/`,
            ], 4);
            assert.equal(
              probe.code,
              137,
              `the sync port answered a container: ${probe.code} ${probe.stdout}${probe.stderr}`,
            );
            await allTraffic(lab, ns, "after a firewall reload on m1");
            await checkRules(lab, ns, forwarding);
          },
        );

        await t.step("after a dockerd restart on m2", async () => {
          await lab.ok(["lab", "restart", "m2", "--dockerd", "--dir", lab.dir]);
          await allTraffic(lab, ns, "after a dockerd restart on m2");
          await checkRules(lab, ns, forwarding);
        });

        await t.step("after a ployzd restart on m3", async () => {
          await lab.ok(["lab", "restart", "m3", "--dir", lab.dir]);
          await allTraffic(lab, ns, "after a ployzd restart on m3");
          await checkRules(lab, ns, forwarding);
        });

        await t.step(
          "a ployz network made with masquerade on is reported with the fix, and the fix works",
          async () => {
            const network = JSON.parse((await lab.docker("m3", ["network", "inspect", "ployz"])).stdout)[0];
            const ids = (await lab.docker("m3", ["ps", "-aq", "--filter", "network=ployz"])).stdout.split(
              "\n",
            )
              .filter((s) => s !== "");
            await lab.docker("m3", ["rm", "-f", ...ids]);
            assert.equal((await lab.docker("m3", ["network", "rm", "ployz"])).code, 0);
            const config = network.IPAM.Config[0];
            const labels = Object.entries(network.Labels as Record<string, string>).flatMap(([k, v]) => [
              "--label",
              `${k}=${v}`,
            ]);
            const made = await lab.docker("m3", [
              "network",
              "create",
              "--subnet",
              config.Subnet,
              "--gateway",
              config.Gateway,
              ...labels,
              "ployz",
            ]);
            assert.equal(made.code, 0, made.stderr);
            await lab.ok(["lab", "restart", "m3", "--dir", lab.dir]);
            const expected =
              `Network "ployz" was created with Docker's IP masquerade on, so its containers' ` +
              `connections to other Machines can leave with this host's address and be dropped; it cannot be changed ` +
              `in place: run "docker network rm ployz" and restart ployzd (it recreates the network with ` +
              `com.docker.network.bridge.enable_ip_masquerade=false)`;
            const reported = await eventually(30_000, "machine ls on m3 reports the network", async () => {
              const r = await lab.on("m3", ["machine", "ls"]);
              return r.stdout.includes(expected) ? r.stdout : undefined;
            });
            assert.match(reported, /mesh: /);
            assert.ok(
              (await Deno.readTextFile(join(lab.dir, "m3", "ployzd.log"))).includes(
                `error[conflict]: ${expected}`,
              ),
            );

            // The fix, as the message gives it.
            assert.equal((await lab.docker("m3", ["network", "rm", "ployz"])).code, 0);
            await lab.ok(["lab", "restart", "m3", "--dir", lab.dir]);
            await eventually(
              30_000,
              "m3's network made again, masquerade off, nothing reported",
              async () => {
                const r = await lab.docker("m3", ["network", "inspect", "ployz"]);
                if (r.code !== 0) return undefined;
                const options = JSON.parse(r.stdout)[0].Options ?? {};
                if (options["com.docker.network.bridge.enable_ip_masquerade"] !== "false") return undefined;
                const ls = await lab.on("m3", ["machine", "ls"]);
                return ls.stdout.includes("IP masquerade on") ? undefined : true;
              },
            );
          },
        );
      } finally {
        underlay.kill();
        await underlay.status;
      }
    },
  }));
}
