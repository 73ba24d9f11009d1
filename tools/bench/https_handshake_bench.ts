// What ployz adds to an https connection: one 1-Machine lab (root, Linux), a Service with an https route, the
// certificate added with `ployz cert add` (so ployz loads it into its Ingress Proxy through the admin API), and a
// second Caddy container from the same image serving the same certificate and key from a static Caddyfile on port
// 8443 (baseline). Each iteration runs 200 full TLS handshakes (new connection, no resumption, SNI, verified) from
// inside the Machine's namespace against one of them; handshakes per second print at the end. Asserts nothing.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type LabState, labUp, type MachinePlan } from "../../lib/lab/mod.ts";
import { selfSignedCertificate } from "../../tests/support/pki.ts";
import { eventually } from "../../tests/support/poll.ts";
import { LAB_READY, labBench, labDownSync, Series } from "./lab_support.ts";

const HOST = "bench.example.test";
const COUNT = 200;
const decoder = new TextDecoder();
const rates = new Series();
let state: LabState | undefined;
let m1: MachinePlan | undefined;
let dir = "";

function run(cmd: string, args: string[], env: Record<string, string> = {}): string {
  const out = new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).outputSync();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed: ${decoder.decode(out.stderr)}`);
  return decoder.decode(out.stdout).trim();
}

function ployz(args: string[]): string {
  const bin = fileURLToPath(new URL("../../bin/ployz", import.meta.url));
  return run(bin, args, { PLOYZ_RUN_DIR: join(dir, "m1", "run"), PLOYZ_CONFIG_DIR: join(dir, "operator") });
}

function docker(args: string[]): string {
  return run("docker", ["-H", `unix://${m1!.dockerSocket}`, ...args]);
}

/** Handshakes per second against 127.0.0.1:`port` inside m1's namespace. */
function handshakes(port: number): number {
  const script = fileURLToPath(new URL("./tls_handshakes.ts", import.meta.url));
  const ms = Number(run("nsenter", [
    `--net=/run/netns/${m1!.namespace}`,
    "--",
    Deno.execPath(),
    "run",
    "-A",
    script,
    "127.0.0.1",
    String(port),
    HOST,
    String(COUNT),
    join(dir, "pki", "cert.pem"),
  ]));
  return COUNT / (ms / 1000);
}

async function setUp(): Promise<void> {
  const tag = crypto.randomUUID().slice(0, 4);
  dir = `/tmp/plz-bench-tls-${tag}`;
  ({ state } = await labUp({
    machines: 1,
    dir,
    name: `bt${tag}`,
    images: ["ployz-test/busybox:1", "ployz-system/caddy:2"],
  }));
  m1 = state.plan.machines[0];
  const pki = join(dir, "pki");
  await Deno.mkdir(pki, { recursive: true });
  await selfSignedCertificate(
    { key: join(pki, "key.pem"), cert: join(pki, "cert.pem") },
    { cn: HOST, san: `DNS:${HOST}` },
  );

  await Deno.writeTextFile(
    join(dir, "compose.yaml"),
    [
      "name: tls",
      "services:",
      "  web:",
      "    image: ployz-test/busybox:1",
      `    command: ["sh", "-c", "echo hi > /www/index.html && exec httpd -f -p 80 -h /www"]`,
      `    x-ports: ["${HOST}:80/https"]`,
    ].join("\n") + "\n",
  );
  ployz(["lab", "exec", "m1", "--dir", dir, "--", "ployz", "deploy", "-f", join(dir, "compose.yaml"), "-y"]);
  ployz(["cert", "add", HOST, "--cert", join(pki, "cert.pem"), "--key", join(pki, "key.pem")]);
  const backend = docker([
    "ps",
    "-q",
    "--filter",
    "label=ployz.project=tls",
  ]).split("\n")[0];
  const address = docker(["inspect", "-f", "{{.NetworkSettings.Networks.ployz.IPAddress}}", backend]);
  await Deno.writeTextFile(
    join(pki, "Caddyfile"),
    `{\n\tauto_https off\n\tadmin off\n}\n\nhttps://${HOST} {\n\ttls /certs/cert.pem /certs/key.pem\n` +
      `\treverse_proxy ${address}:80\n}\n`,
  );
  docker([
    "run",
    "-d",
    "--name",
    "static-caddy",
    "--network",
    "ployz",
    "-p",
    "8443:443",
    "-v",
    `${pki}:/certs:ro`,
    "ployz-system/caddy:2",
    "run",
    "--config",
    "/certs/Caddyfile",
    "--adapter",
    "caddyfile",
  ]);
  // Until both answer with the certificate (ployz's proxy loads it on its next pass).
  await eventually(60_000, "both listeners answer with the certificate", () => {
    handshakes(443);
    handshakes(8443);
    return true;
  });
}

if (LAB_READY) {
  await setUp();
  globalThis.addEventListener("unload", () => {
    for (const [series, values] of rates.entries()) {
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      console.log(`${series}: ${mean.toFixed(0)} handshakes/s (mean of ${values.length} runs)`);
    }
    if (state !== undefined) labDownSync(state.plan.dir);
  });
}

const CASES = [
  { name: "Caddy with a static Caddyfile (tls cert key)", port: 8443, baseline: true },
  { name: "ployz's Ingress Proxy (certificate row via admin API)", port: 443, baseline: false },
];

for (const c of CASES) {
  labBench({
    name: `${COUNT} TLS handshakes, ${c.name}`,
    group: "https handshakes",
    baseline: c.baseline,
    n: 10,
    warmup: 1,
    fn() {
      rates.record(c.name, handshakes(c.port));
    },
  });
}
