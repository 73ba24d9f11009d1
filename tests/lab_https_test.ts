// HTTPS ingress on a real three-Machine lab, with Debian's Pebble (an RFC 8555 test CA) and its challenge test DNS
// server in the lab underlay. A Service with two https hostnames is deployed across the Machines; the asking
// Machine obtains a certificate per hostname with HTTP-01 while DNS points each name at ANOTHER Machine, so the CA
// reads the answer from a Caddy that only has it as a replicated row. Then every Machine's port 443 serves each
// name with the same serial, verified with Pebble's own root (curl --cacert), and port 80 redirects to https.
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildCaddyImage, MAX_RELOAD_RESETS, splitReloadResets } from "./support/caddy.ts";
import { outcomeOf } from "./support/daemon.ts";
import { DOCKER_SOCKET } from "./support/docker.ts";
import { startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { issueCertificate, selfSignedCertificate } from "./support/pki.ts";
import { eventually } from "./support/poll.ts";
import { run, type RunResult } from "./support/spawn.ts";
import { webService } from "./support/web_service.ts";
import { stopChild } from "../lib/util/mod.ts";

const MACHINES = ["m1", "m2", "m3"];
const UNDERLAY = "192.0.2.1";
const ADDRESS: Record<string, string> = { m1: "192.0.2.11", m2: "192.0.2.12", m3: "192.0.2.13" };
const HOSTS = ["app.example.test", "www.example.test"];
// First obtained while a Machine is cut off: until then the CA's DNS sends it nowhere, so every attempt fails.
const LATE = "late.example.test";
// Served from the Cluster's internal root: a .internal name without asking, and a name opted in before its route.
const INTERNAL = "app.internal";
const INTRA = "intra.example.test";

// The second name is written without a protocol: an ingress route is https unless it says otherwise.
function compose(project: string, mark = "a"): string {
  return `name: ${project}\nservices:\n` + webService({
    name: "web",
    index: "hello-$$HOSTNAME",
    mark,
    deploy: "{replicas: 2}",
    ports: [
      `${HOSTS[0]}:80/https`,
      `${HOSTS[1]}:80`,
      `${LATE}:80/https`,
      `${INTERNAL}:80/https`,
      `${INTRA}:80/https`,
    ],
  });
}

/**
 * A curl load loop's result ("N F" on stdout, one "curl: (…)" line on stderr per failed request), its failures split
 * into a Caddy reload's connection resets and the rest. Every request counts; none is retried.
 */
function judgeLoad(r: RunResult): { requests: number; resets: string[]; other: string[] } {
  const [requests, failed] = r.stdout.trim().split(" ").map(Number);
  const failures = r.stderr.split("\n").filter((l) => l.startsWith("curl:"));
  // A failure curl did not explain still counts, as one of the others.
  while (failures.length < failed) failures.push("a request failed without a curl message");
  return { requests, ...splitReloadResets(failures) };
}

/** A load loop that held: it sent requests, and its only failures were a Caddy reload's resets, few enough. */
function assertLoadHeld({ requests, resets, other }: ReturnType<typeof judgeLoad>): void {
  assert.ok(requests > 0);
  assert.deepEqual(other, []);
  assert.ok(resets.length <= MAX_RELOAD_RESETS, resets.join("; "));
}

/** Sends SIGKILL to `child` unless it already exited. */
function signalQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // Already exited.
  }
}

Deno.test(needs(["lab", "command:pebble", "command:pebble-challtestsrv", "command:openssl", "command:curl"], {
  name:
    "HTTPS on a 3-Machine lab: ACME HTTP-01 from Pebble, answers and certificates replicated, 443 everywhere",
  async fn(t) {
    await buildCaddyImage(DOCKER_SOCKET);
    const children: Deno.ChildProcess[] = [];
    await using lab = await startLab("https", 3, {
      env: { PLOYZ_ACME_DIRECTORY: `https://${UNDERLAY}:14000/dir` },
      upArgs: ["--image", "ployz-test/busybox:1", "--image", "ployz-system/caddy:2"],
    });
    const name = lab.name;
    const underlay = (argv: string[]): Promise<RunResult> =>
      run("nsenter", [`--net=/run/netns/${name}-u`, "--", ...argv]);
    // curl from the underlay, silent but for errors, bounded to `seconds`.
    const curl = (seconds: number, args: string[]): Promise<RunResult> =>
      underlay(["curl", "-sS", "-m", String(seconds), ...args]);
    const pki = join(lab.dir, "pki");
    try {
      // Pebble's own listener certificate, from a CA the Machines trust for talking to the CA (never unverified).
      await Deno.mkdir(pki, { recursive: true });
      const ca = await selfSignedCertificate(
        { key: join(pki, "ca.key"), cert: join(pki, "ca.pem") },
        { cn: "lab listener CA" },
      );
      await issueCertificate(
        { key: join(pki, "key.pem"), cert: join(pki, "cert.pem") },
        { cn: "pebble", san: `IP:${UNDERLAY}` },
        ca,
      );
      await Deno.writeTextFile(
        join(pki, "pebble.json"),
        JSON.stringify({
          pebble: {
            listenAddress: `${UNDERLAY}:14000`,
            managementListenAddress: `${UNDERLAY}:15000`,
            certificate: join(pki, "cert.pem"),
            privateKey: join(pki, "key.pem"),
            httpPort: 80,
            tlsPort: 443,
            ocspResponderURL: "",
            externalAccountBindingRequired: false,
          },
        }),
      );
      for (const m of MACHINES) {
        await Deno.mkdir(join(lab.dir, m, "ployz", "acme"), { recursive: true });
        await Deno.copyFile(join(pki, "ca.pem"), join(lab.dir, m, "ployz", "acme", "ca.pem"));
      }
      const spawn = (argv: string[], env: Record<string, string>): void => {
        const child = new Deno.Command("nsenter", {
          args: [`--net=/run/netns/${name}-u`, "--", ...argv],
          env,
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).spawn();
        children.push(child);
      };
      spawn(
        [
          "pebble-challtestsrv",
          "-dns01",
          `${UNDERLAY}:8053`,
          "-management",
          `${UNDERLAY}:8055`,
          "-http01",
          "",
          "-https01",
          "",
          "-tlsalpn01",
          "",
          "-defaultIPv6",
          "",
        ],
        {},
      );
      spawn(
        ["pebble", "-config", join(pki, "pebble.json"), "-dnsserver", `${UNDERLAY}:8053`],
        // No reuse of valid authorizations: every order is validated over HTTP-01 again.
        { PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", PEBBLE_AUTHZREUSE: "0" },
      );
      const root = join(pki, "pebble-root.pem");
      await eventually(20_000, "Pebble answers with its root", async () => {
        const r = await curl(3, [
          "--cacert",
          join(pki, "ca.pem"),
          "-o",
          root,
          `https://${UNDERLAY}:15000/roots/0`,
        ]);
        return r.code === 0 ? true : undefined;
      });
      // https requests to `host` through every Machine's port 443 in turn until `stop` exists; prints
      // "<requests> <failures>" for judgeLoad. `curlFlags` add to each request (-f counts HTTP errors as failures).
      const httpsLoad = (host: string, stop: string, curlFlags: string[] = []): Promise<RunResult> => {
        const flags = ["-sS", ...curlFlags, "-m", "5", "-o", "/dev/null", "--cacert", root].join(" ");
        const script = [
          "n=0; f=0",
          `while [ ! -e ${stop} ]; do`,
          ...MACHINES.map((m) =>
            `  curl ${flags} --resolve ${host}:443:${ADDRESS[m]} https://${host}/ || f=$((f+1)); n=$((n+1))`
          ),
          "done",
          'echo "$n $f"',
        ].join("\n");
        return underlay(["sh", "-c", script]);
      };

      // The asker is the smallest Machine id; DNS sends the CA for each name to other Machines than the asker.
      const listed = JSON.parse(
        (await lab.ok(["machine", "ls", "--json"], { PLOYZ_RUN_DIR: join(lab.dir, "m1", "run") })).stdout,
      );
      const machines = listed.machines as { id: string; name: string }[];
      const asker = [...machines].sort((a, b) => a.id < b.id ? -1 : 1)[0].name;
      const others = MACHINES.filter((m) => m !== asker);
      for (const [i, host] of HOSTS.entries()) {
        const r = await curl(3, [
          "-d",
          JSON.stringify({ host: `${host}.`, addresses: [ADDRESS[others[i % 2]]] }),
          `http://${UNDERLAY}:8055/add-a`,
        ]);
        assert.equal(r.code, 0, r.stderr);
      }
      console.log(`asker ${asker}; ${HOSTS[0]} → ${others[0]}, ${HOSTS[1]} → ${others[1]}`);

      const cert = (args: string[]): Promise<RunResult> =>
        lab.ployz(["cert", ...args], { PLOYZ_RUN_DIR: join(lab.dir, "m3", "run") });
      const certRows = async (): Promise<Record<string, Record<string, unknown>>> => {
        const r = await cert(["ls", "--json"]);
        assert.equal(r.code, 0, r.stderr);
        assert.doesNotMatch(r.stdout, /PRIVATE KEY/);
        const rows = JSON.parse(r.stdout).certificates as Record<string, unknown>[];
        return Object.fromEntries(rows.map((c) => [String(c.hostname), c]));
      };

      await t.step(
        "cert add --internal opts a name in to the Cluster's internal root before its route exists",
        async () => {
          const r = await cert(["add", INTRA, "--internal", "--json"]);
          assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
          const added = JSON.parse(r.stdout).certificate;
          assert.equal(added.source, "internal");
          assert.match(String(added.issuer), /ployz internal root/);
          const both = await cert([
            "add",
            INTRA,
            "--internal",
            "--cert",
            "/nonexistent",
            "--key",
            "/nonexistent",
          ]);
          assert.equal(both.code, 2);
          assert.match(both.stderr, /^error\[invalid_argument\]: "--internal" takes no "--cert" or "--key"/m);
          const wild = await cert(["add", "*.shop.internal", "--internal"]);
          assert.equal(wild.code, 1);
          assert.match(wild.stderr, /^error\[invalid_argument\]: Invalid hostname: wildcard/m);
          assert.doesNotMatch(r.stdout + both.stderr + wild.stderr, /PRIVATE KEY| {4}at /);
        },
      );

      // `ployz deploy` of the lab's compose.yaml, run on Machine `via`.
      const deployVia = (via: string): Promise<RunResult> =>
        lab.ployz([
          "lab",
          "exec",
          via,
          "--dir",
          lab.dir,
          "--",
          "ployz",
          "deploy",
          "-f",
          join(lab.dir, "compose.yaml"),
          "-y",
          "--json",
        ]);

      let deployed = 0;
      await t.step("deploy a Service with two https hostnames across 3 Machines", async () => {
        const file = join(lab.dir, "compose.yaml");
        await Deno.writeTextFile(file, compose("tls"));
        const r = await deployVia("m1");
        assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
        assert.equal(outcomeOf(r).status, "succeeded");
        deployed = Date.now();
      });

      // The serial Machine `m` serves for `host`, once a request over https verified by Pebble's root (or `ca`)
      // succeeds. `answered: false` accepts any HTTP answer (a Machine cut off from every replica answers 502 over TLS).
      const servedSerial = async (
        host: string,
        m: string,
        answered = true,
        ca = root,
        seconds = 5,
      ): Promise<string | undefined> => {
        const body = await curl(seconds, [
          "--cacert",
          ca,
          "--resolve",
          `${host}:443:${ADDRESS[m]}`,
          `https://${host}/`,
        ]);
        if (body.code !== 0 || (answered && !body.stdout.startsWith("hello-"))) return undefined;
        const shown = await underlay([
          "sh",
          "-c",
          `openssl s_client -connect ${ADDRESS[m]}:443 -servername ${host} </dev/null 2>/dev/null | ` +
          "openssl x509 -noout -serial",
        ]);
        return /^serial=/.test(shown.stdout)
          ? shown.stdout.trim().slice("serial=".length).toLowerCase()
          : undefined;
      };
      // Points `host` at `address` in the CA's DNS (the challenge test server's management API).
      const pointDns = async (host: string, address: string): Promise<void> => {
        for (
          const [path, body] of [["clear-a", { host: `${host}.` }], ["add-a", {
            host: `${host}.`,
            addresses: [address],
          }]]
        ) {
          const r = await curl(3, [
            "-d",
            JSON.stringify(body),
            `http://${UNDERLAY}:8055/${path}`,
          ]);
          assert.equal(r.code, 0, r.stderr);
        }
      };

      const serials = new Map<string, string>();
      await t.step(
        "every Machine's 443 serves each name with one certificate, verified by Pebble's root",
        async () => {
          for (const host of HOSTS) {
            for (const m of MACHINES) {
              const serial = await eventually(
                90_000,
                `${host} valid on ${m}`,
                () => servedSerial(host, m),
                250,
              );
              const seen = serials.get(host);
              if (seen === undefined) serials.set(host, serial);
              else assert.equal(serial, seen, `${m} serves the same certificate for ${host}`);
            }
          }
          console.log(
            `figure: Deploy end → valid certificates for 2 names on 3 Machines: ${
              ((Date.now() - deployed) / 1000).toFixed(1)
            } s`,
          );
          assert.notEqual(serials.get(HOSTS[0]), serials.get(HOSTS[1]));
          let obtained = 0;
          for (const m of MACHINES) {
            const text = await Deno.readTextFile(join(lab.dir, m, "ployzd.log"));
            obtained += text.split("\n").filter((l) => /certificates: obtained "/.test(l)).length;
          }
          assert.equal(obtained, HOSTS.length, "one certificate obtained per name, by one Machine");
          // The CA was asked to validate only once every Machine awaited confirmed serving the answer: all three,
          // as each accepts ingress (a proxy the Deploy had not filled yet is awaited too), and never after the
          // bound named one that did not.
          const told = (await Deno.readTextFile(join(lab.dir, asker, "ployzd.log"))).split("\n");
          // Every Machine's certificate lines, for a failure to say who asked what and when.
          const certificateLines = async (): Promise<string> => {
            const out: string[] = [];
            for (const m of MACHINES) {
              const text = await Deno.readTextFile(join(lab.dir, m, "ployzd.log"));
              out.push(
                ...text.split("\n").filter((l) => l.includes("certificates:")).map((l) => `${m}: ${l}`),
              );
            }
            return out.join("\n");
          };
          for (const host of HOSTS) {
            const line = told.find((l) => l.includes(`the answer for "${host}" is served by`)) ?? "";
            const confirmed = /served by ((?:m\d, )*m\d) \(confirmed in (\d+) ms\); asking the CA/.exec(line);
            if (confirmed === null) {
              assert.fail(
                `${asker} confirmed the answer for ${host} before validation:\n${await certificateLines()}`,
              );
            }
            assert.equal(confirmed[1], MACHINES.join(", "), `every Machine's proxy confirmed ${host}`);
            console.log(`figure: answer for ${host} confirmed by ${confirmed[1]} in ${confirmed[2]} ms`);
          }
          assert.equal(told.filter((l) => /did not confirm/.test(l)).length, 0, await certificateLines());
        },
      );

      await t.step("port 80 redirects to https; unknown names still get the catch-all", async () => {
        for (const m of MACHINES) {
          const r = await curl(5, [
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{redirect_url}",
            "--resolve",
            `${HOSTS[0]}:80:${ADDRESS[m]}`,
            `http://${HOSTS[0]}/path?q=1`,
          ]);
          assert.equal(r.stdout, `308 https://${HOSTS[0]}/path?q=1`, r.stderr);
        }
        const other = await curl(5, [
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "-H",
          "Host: nope.example.test",
          `http://${ADDRESS.m1}/`,
        ]);
        assert.equal(other.stdout, "404");
      });

      await t.step(
        "internal names: every Machine's 443 serves one certificate, verified by the root ployz cert root prints",
        async () => {
          const shown = await lab.ployz(["cert", "root"], { PLOYZ_RUN_DIR: join(lab.dir, others[0], "run") });
          assert.equal(shown.code, 0, shown.stderr);
          assert.match(shown.stdout, /^-----BEGIN CERTIFICATE-----\n[^]*\n-----END CERTIFICATE-----\n$/);
          assert.doesNotMatch(shown.stdout, /PRIVATE KEY/);
          const clusterRoot = join(pki, "cluster-root.pem");
          await Deno.writeTextFile(clusterRoot, shown.stdout);
          const rows = await certRows();
          for (const host of [INTERNAL, INTRA]) {
            let first: string | undefined;
            for (const m of MACHINES) {
              const serial = await eventually(
                60_000,
                `${host} valid on ${m} under the Cluster root`,
                () => servedSerial(host, m, true, clusterRoot),
                250,
              );
              first ??= serial;
              assert.equal(serial, first, `${m} serves the same certificate for ${host}`);
            }
            assert.equal(rows[host].source, "internal");
            assert.match(String(rows[host].issuer), /ployz internal root/);
            assert.equal(String(rows[host].serial).replace(/^0+/, ""), first?.replace(/^0+/, ""));
          }
          // Issued by the asker for the .internal name, by the Entry Machine for the opted-in one; no CA was asked.
          const id = (n: string): string | undefined => machines.find((x) => x.name === n)?.id;
          assert.equal(rows[INTERNAL].renewed_by, id(asker));
          assert.equal(rows[INTRA].renewed_by, id("m3"));
          assert.equal(
            await servedSerial(INTERNAL, asker, true, root),
            undefined,
            "Pebble's root does not verify it",
          );
          const table = await cert(["ls"]);
          assert.match(
            table.stdout,
            new RegExp(`app\\.internal +internal +O=ployz, CN=ployz internal root `),
          );
          const log = (await Deno.readTextFile(join(lab.dir, asker, "ployzd.log"))).split("\n");
          assert.ok(
            log.some((l) =>
              l.includes(`certificates: issued "${INTERNAL}" from the Cluster's internal root`)
            ),
          );
          assert.ok(!log.some((l) => l.includes(`"${INTERNAL}"`) && /obtained|cannot/.test(l)));
        },
      );

      await t.step(
        "ployz cert ls (through m3) shows issuer, expiry and the Machine that obtained each",
        async () => {
          const rows = await certRows();
          for (const host of HOSTS) {
            assert.equal(rows[host].servable, true);
            assert.equal(rows[host].source, "acme");
            assert.match(String(rows[host].issuer), /Pebble Intermediate CA/);
            assert.equal(String(rows[host].serial).replace(/^0+/, ""), serials.get(host)?.replace(/^0+/, ""));
            assert.equal(rows[host].renewed_by, machines.find((x) => x.name === asker)?.id);
          }
          const table = await cert(["ls"]);
          assert.match(table.stdout, /HOSTNAME +SOURCE +ISSUER +NOT AFTER +RENEWED BY +STATUS +LAST ERROR/);
          assert.match(table.stdout, new RegExp(`app\\.example\\.test +acme +.*Pebble.* ${asker} +served `));
          console.log(table.stdout.trim());
        },
      );

      await t.step(
        "a forced renewal reaches all 3 Machines with a new serial; no request fails meanwhile",
        async () => {
          const stop = join(lab.dir, "load.stop");
          const load = httpsLoad(HOSTS[0], stop);
          const old = serials.get(HOSTS[0]);
          const began = Date.now();
          const renew = await cert(["renew", HOSTS[0]]);
          assert.equal(renew.code, 0, renew.stderr);
          for (const m of MACHINES) {
            await eventually(60_000, `new serial on ${m}`, async () => {
              const serial = await servedSerial(HOSTS[0], m);
              return serial !== undefined && serial !== old ? serial : undefined;
            }, 250);
          }
          const took = Date.now() - began;
          await Deno.writeTextFile(stop, "");
          const { requests, resets, other } = judgeLoad(await load);
          console.log(
            `figure: forced renewal → new serial on 3 Machines in ${(took / 1000).toFixed(1)} s; ` +
              `${requests} https requests meanwhile, ${resets.length} reset during a Caddy reload, ` +
              `${other.length} other failures`,
          );
          // The served serial is recorded before judging the load, so a failed request here fails this step alone.
          const fresh = new Set<string>();
          for (const m of MACHINES) fresh.add(String(await servedSerial(HOSTS[0], m)));
          assert.equal(fresh.size, 1, "one serial on every Machine");
          serials.set(HOSTS[0], [...fresh][0]);
          assertLoadHeld({ requests, resets, other });
        },
      );

      await t.step(
        "a redeploy under a load loop over https through every Machine fails nothing",
        async () => {
          const stop = join(lab.dir, "redeploy.stop");
          const load = httpsLoad(HOSTS[1], stop, ["-f"]);
          const file = join(lab.dir, "compose.yaml");
          await Deno.writeTextFile(file, compose("tls", "b"));
          const r = await deployVia("m1");
          await Deno.writeTextFile(stop, "");
          const { requests, resets, other } = judgeLoad(await load);
          assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
          assert.equal(outcomeOf(r).status, "succeeded");
          console.log(
            `figure: redeploy over https, ${requests} requests through 3 Machines, ` +
              `${resets.length} reset during a Caddy reload, ${other.length} other failures`,
          );
          assertLoadHeld({ requests, resets, other });
        },
      );

      await t.step(
        "a renewal the CA refuses keeps the old certificate and reports the CA's problem",
        async () => {
          // The CA is now sent to an address where nothing listens on port 80: its validation fails, with its detail.
          await pointDns(HOSTS[0], UNDERLAY);
          const asked = Date.now();
          assert.equal((await cert(["renew", HOSTS[0]])).code, 0);
          // A timeout names what the asker did, so a late report shows where its time went.
          const row = await eventually(60_000, "the failure in cert ls", async () => {
            const rows = await certRows();
            return rows[HOSTS[0]].last_error !== undefined ? rows[HOSTS[0]] : undefined;
          }).catch(async (error) => {
            const log = (await Deno.readTextFile(join(lab.dir, asker, "ployzd.log"))).split("\n");
            const told = log.filter((line) => line.includes("certificates:")).slice(-20).join("\n");
            throw new Error(`${(error as Error).message}; ${asker}'s last certificate lines:\n${told}`);
          });
          console.log(`renewal refused, reported after ${((Date.now() - asked) / 1000).toFixed(1)} s`);
          console.log(`last_error: ${row.last_error}`);
          assert.match(String(row.last_error), /acme-challenge.*(refused|connect)/i);
          assert.equal(row.servable, true);
          for (const m of MACHINES) assert.equal(await servedSerial(HOSTS[0], m), serials.get(HOSTS[0]));
          const table = await cert(["ls"]);
          assert.match(table.stdout, /renewal asked/);
        },
      );

      await t.step(
        "a Machine partitioned during a renewal and a first issuance: both succeed, it converges after heal",
        async () => {
          await pointDns(HOSTS[0], ADDRESS[others[0]]);
          const cut = others[1];
          const old = serials.get(HOSTS[0]);
          await lab.ok(["lab", "partition", `${asker},${others[0]}`, "/", cut, "--dir", lab.dir]);
          const renew = await lab.ployz(["cert", "renew", HOSTS[0]], {
            PLOYZ_RUN_DIR: join(lab.dir, asker, "run"),
          });
          assert.equal(renew.code, 0, renew.stderr);
          // LATE has never had a certificate (its attempts so far failed); now the CA can reach a Machine for it,
          // and the operator asks for the next attempt now rather than after its pause.
          await pointDns(LATE, ADDRESS[others[0]]);
          const retry = await lab.ployz(["cert", "renew", LATE], {
            PLOYZ_RUN_DIR: join(lab.dir, asker, "run"),
          });
          assert.equal(retry.code, 0, retry.stderr);
          let fresh: string | undefined;
          for (const m of [asker, others[0]]) {
            fresh = await eventually(90_000, `new serial on ${m} during the partition`, async () => {
              const serial = await servedSerial(HOSTS[0], m);
              return serial !== undefined && serial !== old ? serial : undefined;
            }, 250);
          }
          assert.equal(
            await servedSerial(HOSTS[0], cut, false),
            old,
            `${cut}, cut off, still serves the old certificate`,
          );
          // The cut-off Machine is not Down yet: the asker waited its bound, then asked the CA naming it.
          assert.match(
            await Deno.readTextFile(join(lab.dir, asker, "ployzd.log")),
            new RegExp(
              `asking the CA to validate "${
                HOSTS[0].replaceAll(".", "\\.")
              }" though ${cut} did not confirm ` +
                "serving the answer within 30 s; served by ",
            ),
          );
          let first: string | undefined;
          for (const m of [asker, others[0]]) {
            first = await eventually(90_000, `${LATE} first obtained, served by ${m}`, async () => {
              const serial = await servedSerial(LATE, m);
              return serial !== undefined && (first === undefined || serial === first) ? serial : undefined;
            }, 250);
          }
          assert.equal(
            await servedSerial(LATE, cut, false),
            undefined,
            `${cut}, cut off, has no ${LATE} yet`,
          );
          assert.match(
            await Deno.readTextFile(join(lab.dir, asker, "ployzd.log")),
            new RegExp(
              `certificates: obtained "${LATE.replaceAll(".", "\\.")}" serial .*\\(${cut} did not confirm`,
            ),
          );
          const healed = Date.now();
          await lab.ok(["lab", "heal", "--dir", lab.dir]);
          await eventually(
            90_000,
            `${cut} converges after heal`,
            async () => await servedSerial(HOSTS[0], cut) === fresh ? true : undefined,
            250,
          );
          await eventually(
            90_000,
            `${cut} serves ${LATE} after heal`,
            async () => await servedSerial(LATE, cut) === first ? true : undefined,
            250,
          );
          console.log(
            `figure: after heal, ${cut} served the renewed certificate in ${
              ((Date.now() - healed) / 1000).toFixed(1)
            } s`,
          );
          serials.set(HOSTS[0], fresh!);
        },
      );

      // The port-taken steps: Machine `taken` loses a port its Ingress Proxy needs, asked through the asker, and the
      // other two keep serving.
      const taken = others[1];
      const viaAsker = { PLOYZ_RUN_DIR: join(lab.dir, asker, "run") };
      // Stops taken's Ingress Proxy, and another web server there takes `port` before it starts again.
      const takePort = async (port: number): Promise<Deno.ChildProcess> => {
        const stop = await lab.ployz(["stop", "ployz-system/caddy", "--machine", taken], viaAsker);
        assert.equal(stop.code, 0, `${stop.stdout}${stop.stderr}`);
        const holder = new Deno.Command("nsenter", {
          args: [
            `--net=/run/netns/${name}-${taken.slice(1)}`,
            "--",
            "openssl",
            "s_server",
            "-accept",
            String(port),
            "-cert",
            join(pki, "cert.pem"),
            "-key",
            join(pki, "key.pem"),
            "-www",
          ],
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).spawn();
        children.push(holder);
        await eventually(10_000, `port ${port} taken on ${taken}`, async () => {
          const r = await underlay([
            "sh",
            "-c",
            `echo | openssl s_client -connect ${ADDRESS[taken]}:${port} 2>&1`,
          ]);
          return /CN ?= ?pebble/.test(r.stdout) ? true : undefined;
        });
        return holder;
      };
      // One request each, never retried: a Machine that stopped serving for a moment is what this judges. Its bound
      // is 15 s because a loaded host once took over 5 s for the handshake alone.
      const othersServe = async (): Promise<void> => {
        for (const o of [asker, others[0]]) {
          assert.equal(
            await servedSerial(HOSTS[0], o, true, root, 15),
            serials.get(HOSTS[0]),
            `${o} keeps serving`,
          );
        }
      };
      const servesAgain = async (what: string): Promise<void> => {
        await eventually(
          60_000,
          `${taken} serves again once ${what} is free`,
          async () => await servedSerial(HOSTS[0], taken) === serials.get(HOSTS[0]) ? true : undefined,
          250,
        );
      };

      await t.step(
        "port 443 taken on one Machine: its proxy's start names Machine, port and holder; the others serve",
        async () => {
          const holder = await takePort(443);
          // A failure here must not leave the port taken for the steps after it.
          using _free = { [Symbol.dispose]: () => signalQuietly(holder) };
          const start = await lab.ployz(["start", "ployz-system/caddy", "--machine", taken], viaAsker);
          console.log((start.stdout + start.stderr).trim());
          assert.equal(start.code, 1);
          assert.match(
            start.stdout + start.stderr,
            new RegExp(
              `error\\[conflict\\]: Port 443 on Machine "${taken}" is already in use: openssl \\(pid ${holder.pid}\\) ` +
                "holds it; free the port",
            ),
          );
          assert.doesNotMatch(start.stdout + start.stderr, / {4}at /, "no stack trace");
          await othersServe();
          await stopChild(holder);
          const again = await lab.ployz(["start", "ployz-system/caddy", "--machine", taken], viaAsker);
          assert.equal(again.code, 0, `${again.stdout}${again.stderr}`);
          await servesAgain("the port");
        },
      );

      await t.step(
        "port 80 taken on one Machine: a Deploy's proxy fill names port 80 and the holder; the others serve",
        async () => {
          const holder = await takePort(80);
          using _free = { [Symbol.dispose]: () => signalQuietly(holder) };
          // The Project is unchanged: this Deploy's only operation is filling the stopped ingress slot.
          const refused = await deployVia(asker);
          const failed = outcomeOf(refused);
          console.log(JSON.stringify(failed.failed));
          // The Outcome is honest: what ran before the fill is its completed prefix.
          assert.notEqual(refused.code, 0);
          assert.ok(["partial", "failed"].includes(String(failed.status)), String(failed.status));
          const failure = failed.failed as { op: Record<string, unknown>; error: Record<string, unknown> };
          assert.equal(failure.op.kind, "ingress");
          assert.equal(failure.op.machine_name, taken);
          assert.equal(failure.error.code, "conflict");
          assert.match(
            String(failure.error.message),
            new RegExp(
              `^Port 80 on Machine "${taken}" is already in use: openssl \\(pid ${holder.pid}\\) holds it; free the port`,
            ),
          );
          assert.doesNotMatch(refused.stdout + refused.stderr, / {4}at /, "no stack trace");
          await othersServe();
          await stopChild(holder);
          const again = await deployVia(asker);
          assert.equal(again.code, 0, `${again.stdout}${again.stderr}`);
          assert.equal(outcomeOf(again).status, "succeeded");
          await servesAgain("port 80");
        },
      );

      await t.step("bad input: an unknown name, a missing file, a certificate for another name", async () => {
        const unknown = await cert(["renew", "nope.example.test"]);
        assert.equal(unknown.code, 1);
        assert.match(unknown.stderr, /^error\[not_found\]: No certificate for "nope\.example\.test"/m);
        const missing = await cert([
          "add",
          "x.example.test",
          "--cert",
          "/nonexistent",
          "--key",
          "/nonexistent",
        ]);
        assert.equal(missing.code, 2);
        assert.match(missing.stderr, /error\[invalid_argument\]: Cannot read --cert "\/nonexistent"/);
        const wrong = await cert([
          "add",
          "x.example.test",
          "--cert",
          join(pki, "cert.pem"),
          "--key",
          join(pki, "key.pem"),
        ]);
        assert.match(
          wrong.stderr,
          /error\[invalid_argument\]: Cannot use the certificate for "x\.example\.test": certificate does not cover/,
        );
        const wild = await cert([
          "add",
          "*.example.test",
          "--cert",
          join(pki, "cert.pem"),
          "--key",
          join(pki, "key.pem"),
        ]);
        assert.match(wild.stderr, /error\[invalid_argument\]: Invalid hostname: wildcard .*DNS-01/);
        assert.doesNotMatch(wrong.stderr + wild.stderr, / {4}at /, "no stack trace");
      });

      await t.step("no key is printed: not in any ployzd log", async () => {
        for (const m of MACHINES) {
          const text = await Deno.readTextFile(join(lab.dir, m, "ployzd.log"));
          assert.doesNotMatch(text, /PRIVATE KEY/);
          if (m === asker) assert.match(text, /certificates: obtained "app\.example\.test" serial/);
        }
      });
    } finally {
      for (const m of MACHINES) {
        const text = await Deno.readTextFile(join(lab.dir, m, "ployzd.log")).catch(() => "");
        const lines = text.split("\n").filter((l) => /certificates:|serving: Caddy/.test(l));
        console.log(`${m}: ${lines.slice(-8).join("\n    ")}`);
      }
      for (const child of children) await stopChild(child);
    }
  },
}));
