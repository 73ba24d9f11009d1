// The operator anywhere, end to end, as root on a real lab: an operator network namespace with no ployzd and no
// Docker socket, only the ssh client and the ployz CLI, reaches the Cluster through Debian's sshd running in m1's
// namespace (its own host key, port and AuthorizedKeysFile; the session's ployzd is this checkout's, under the
// relocated `dial-stdio` permission set). It saves a context, is refused clearly for every bad connection (unknown
// context, malformed URL, unknown host key, unreachable port, refused key, wrong user, no ployzd on the host, a
// Machine not in a Cluster), deploys a Project across three Machines (the context from the Compose file's
// `x-context`) and one with a `build:` Service (its context read here, built on m1, with no Docker here), reads ls/ps/inspect/top/logs -f for all three over one SSH connection per command, and has the SSH
// connection cut mid-Deploy: the Outcome keeps the completed prefix, names the failed operation and the operations
// never attempted, and the re-run finishes what was left.
//
// Unix sockets are not bound to network namespaces, so "no ployzd" in the operator namespace means: its
// PLOYZ_RUN_DIR is an empty directory and nothing is passed that names a lab Machine's socket.
import assert from "node:assert/strict";
import { join } from "node:path";
import { sshArgs } from "../lib/installer/mod.ts";
import { attachToUnderlay } from "../lib/lab/mod.ts";
import { chooseConnection, openConnection } from "../lib/operator/mod.ts";
import { permissionFlags, permissionSet, relocate } from "../lib/permissions/mod.ts";
import { connectMachine, type MachineClient, stdioFetch, viaEntry } from "../lib/rpc/mod.ts";
import { followDeploy, lastOutcome } from "./support/daemon.ts";
import { IMAGE } from "./support/docker.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";
import { ROOT, run, type RunResult } from "./support/spawn.ts";
import { stopChild } from "../lib/util/mod.ts";

const OPERATOR_ADDRESS = "192.0.2.50";
const SSH_PORT = 2222;
/** A port of the same sshd whose sessions find no ployzd on their PATH. */
const NO_PLOYZD_PORT = 2223;
/** A port whose sessions reach m4, a Machine outside the Cluster. */
const OUTSIDE_PORT = 2224;

interface LabJson {
  plan: {
    name: string;
    underlayNamespace: string;
    bridge: string;
    machines: {
      name: string;
      namespace: string;
      underlayAddress: string;
      ployzRunDir?: string;
      dir: string;
    }[];
  };
}

interface OutcomeJson {
  status: string;
  completed: { kind: string; machine_name: string; service: string }[];
  failed?: {
    op: { kind: string; "machine_name": string; service: string };
    error: { code: string; message: string };
    "outcome_unknown"?: boolean;
  };
  "not_attempted": { kind: string; "machine_name": string; service: string }[];
}

async function sh(cmd: string, args: string[]): Promise<RunResult> {
  const result = await run(cmd, args);
  assert.equal(result.code, 0, `${cmd} ${args.join(" ")}: ${result.stderr}`);
  return result;
}

Deno.test(needs(["lab", "path:/usr/sbin/sshd"], {
  name:
    "operator namespace drives a 3-Machine lab over SSH: contexts, refusals, deploy, reads, a cut connection",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await using lab = await startLab("os", 4, { join: 3 });
    const state = JSON.parse(await Deno.readTextFile(join(lab.dir, "lab.json"))) as LabJson;
    const plan = state.plan;
    const m1 = plan.machines[0];
    const m4 = plan.machines[3];
    const opNs = `${plan.name}-op`;
    const dir = join(lab.dir, "ssh");
    await Deno.mkdir(join(dir, "bin"), { recursive: true, mode: 0o700 });
    let sshd: Deno.ChildProcess | undefined;
    try {
      // The operator namespace: one veth onto the lab bridge, nothing else.
      await attachToUnderlay(plan, opNs, "vop", OPERATOR_ADDRESS);

      // ployzd as an installed host has it: on the SSH user's PATH, under its relocated permission set.
      const runDir = (m: typeof m1): string => m.ployzRunDir ?? join(m.dir, "run");
      const wrapper = (m: typeof m1): string => {
        const flags = permissionFlags(relocate(permissionSet("dial-stdio"), {
          dataDir: join(m.dir, "ployz"),
          runDir: runDir(m),
          dockerSocket: join(m.dir, "docker.sock"),
          dockerRoot: join(m.dir, "data"),
        }));
        return `#!/bin/sh\nexport PLOYZ_RUN_DIR='${
          runDir(m)
        }'\nexec '${Deno.execPath()}' run --quiet --no-prompt ` +
          `--cached-only --frozen --config '${ROOT}/deno.json' ${flags.map((f) => `'${f}'`).join(" ")} ` +
          `'${ROOT}/cmd/ployzd.ts' "$@"\n`;
      };
      await Deno.mkdir(join(dir, "m4bin"), { recursive: true });
      await Deno.writeTextFile(join(dir, "bin", "ployzd"), wrapper(m1), { mode: 0o755 });
      await Deno.writeTextFile(join(dir, "m4bin", "ployzd"), wrapper(m4), { mode: 0o755 });
      await Deno.mkdir(join(dir, "empty"), { recursive: true });

      // Keys: the host's, the operator's, and a stranger's the host does not know.
      for (const key of ["host", "operator", "stranger"]) {
        await sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", `ployz-${key}`, "-f", join(dir, key)]);
      }
      await Deno.copyFile(join(dir, "operator.pub"), join(dir, "authorized_keys"));
      await Deno.mkdir("/run/sshd", { recursive: true });
      await Deno.writeTextFile(
        join(dir, "sshd_config"),
        [
          `Port ${SSH_PORT}`,
          `Port ${NO_PLOYZD_PORT}`,
          `Port ${OUTSIDE_PORT}`,
          `ListenAddress ${m1.underlayAddress}`,
          `HostKey ${join(dir, "host")}`,
          `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
          `PidFile ${join(dir, "sshd.pid")}`,
          "PermitRootLogin prohibit-password",
          "PasswordAuthentication no",
          "KbdInteractiveAuthentication no",
          "UsePAM no",
          "StrictModes no",
          "AllowUsers root",
          `SetEnv PATH=${join(dir, "bin")}:/usr/bin:/bin`,
          `Match LocalPort ${NO_PLOYZD_PORT}`,
          `  SetEnv PATH=${join(dir, "empty")}:/usr/bin:/bin`,
          `Match LocalPort ${OUTSIDE_PORT}`,
          `  SetEnv PATH=${join(dir, "m4bin")}:/usr/bin:/bin`,
          "",
        ].join("\n"),
      );
      sshd = new Deno.Command("nsenter", {
        args: [
          `--net=/var/run/netns/${m1.namespace}`,
          "/usr/sbin/sshd",
          "-D",
          "-e",
          "-f",
          join(dir, "sshd_config"),
        ],
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const sshdLog = new Response(sshd.stderr).text();

      // The operator's ssh config (PLOYZ_SSH_CONFIG): its own key and known_hosts, nothing from ~/.ssh.
      const sshConfig = (identity: string): string => {
        const path = join(dir, `ssh_config_${identity}`);
        Deno.writeTextFileSync(
          path,
          `Host *\n  IdentityFile ${join(dir, identity)}\n  IdentitiesOnly yes\n` +
            `  UserKnownHostsFile ${join(dir, "known_hosts")}\n  GlobalKnownHostsFile /dev/null\n`,
        );
        return path;
      };
      const operatorEnv = {
        HOME: join(dir, "home"),
        PLOYZ_CONFIG_DIR: join(dir, "operator-config"),
        PLOYZ_RUN_DIR: join(dir, "operator-run"),
        PLOYZ_SSH_CONFIG: sshConfig("operator"),
      };
      await Deno.mkdir(operatorEnv.HOME, { recursive: true });
      await Deno.mkdir(operatorEnv.PLOYZ_RUN_DIR, { recursive: true });
      await Deno.writeTextFile(join(dir, "known_hosts"), "");
      const op = (args: string[], extra: Record<string, string> = {}): Promise<RunResult> =>
        run("ip", ["netns", "exec", opNs, join(ROOT, "bin", "ployz"), ...args], { ...operatorEnv, ...extra });
      const opOk = async (args: string[], extra: Record<string, string> = {}): Promise<RunResult> => {
        const r = await op(args, extra);
        assert.equal(r.code, 0, `ployz ${args.join(" ")}: ${r.stderr}${r.stdout}`);
        return r;
      };
      const url = `ssh://root@${m1.underlayAddress}:${SSH_PORT}`;
      await eventually(30_000, "sshd listens", async () => {
        const r = await run("ip", [
          "netns",
          "exec",
          opNs,
          "ssh-keyscan",
          "-T",
          "2",
          "-p",
          String(SSH_PORT),
          m1.underlayAddress,
        ]);
        return r.stdout.includes("ssh-ed25519") ? true : undefined;
      });
      await machinesUp(lab, "m1", 3);

      await t.step(
        "bad connections: one line naming the context and host, nothing saved half-way",
        async () => {
          const expectError = async (
            args: string[],
            code: string,
            message: RegExp,
            extra = {},
          ): Promise<void> => {
            const r = await op(args, extra);
            assert.notEqual(r.code, 0, `ployz ${args.join(" ")} should fail: ${r.stdout}`);
            const lines = r.stderr.trim().split("\n");
            assert.equal(lines.length, 1, `one line: ${r.stderr}`);
            assert.match(lines[0], new RegExp(`^error\\[${code}\\]: `), r.stderr);
            assert.match(lines[0], message);
          };
          await expectError(
            ["context", "add", "m1", "ssh//root@host"],
            "invalid_argument",
            /Invalid connection URL/,
          );
          await expectError(
            ["--context", "nowhere", "ps"],
            "not_found",
            /Unknown context "nowhere" \(from --context\)/,
          );
          await opOk(["context", "add", "lab", url]);
          const listed = JSON.parse((await opOk(["context", "ls", "--json"])).stdout);
          assert.deepEqual(listed.active, { source: "context use", context: "lab", url });
          // Host key checking stays on: the first contact is refused, naming the host and how to trust it.
          await expectError(
            ["ps"],
            "unauthenticated",
            /context "lab" \(root@192\.0\.2\.11:2222\): the host key of "192\.0\.2\.11" is not trusted.*ssh-keyscan -p 2222 192\.0\.2\.11/,
          );
          const scanned = await run("ip", [
            "netns",
            "exec",
            opNs,
            "ssh-keyscan",
            "-p",
            String(SSH_PORT),
            m1.underlayAddress,
          ]);
          await Deno.writeTextFile(join(dir, "known_hosts"), scanned.stdout);
          for (const port of [NO_PLOYZD_PORT, OUTSIDE_PORT]) {
            const other = await run("ip", [
              "netns",
              "exec",
              opNs,
              "ssh-keyscan",
              "-p",
              String(port),
              m1.underlayAddress,
            ]);
            await Deno.writeTextFile(join(dir, "known_hosts"), other.stdout, { append: true });
          }
          await expectError(
            ["--connect", `ssh://root@${m1.underlayAddress}:2299`, "ps"],
            "unavailable",
            /"192\.0\.2\.11" is unreachable: .*Connection refused/,
          );
          await expectError(["ps"], "unauthenticated", /refused the login of user "root"/, {
            PLOYZ_SSH_CONFIG: sshConfig("stranger"),
          });
          await expectError(
            ["--connect", `ssh://nobody@${m1.underlayAddress}:${SSH_PORT}`, "ps"],
            "unauthenticated",
            /refused the login of user "nobody"/,
          );
          await expectError(
            ["--connect", `ssh://root@${m1.underlayAddress}:${NO_PLOYZD_PORT}`, "ps"],
            "not_found",
            /"ployzd" is not installed on "192\.0\.2\.11"/,
          );
          await expectError(
            ["--connect", `ssh://root@${m1.underlayAddress}:${OUTSIDE_PORT}`, "ps"],
            "conflict",
            /^error\[conflict\]: Machine ".+" reached through root@192\.0\.2\.11:2224 is not in a Cluster/,
          );
          assert.deepEqual(
            JSON.parse((await opOk(["context", "ls", "--json"])).stdout).contexts.map((c: { name: string }) =>
              c.name
            ),
            ["lab"],
            "no refused connection saved a context",
          );
        },
      );

      let opSeconds = 0;
      await t.step(
        "deploy across three Machines from the operator namespace (x-context picks the context)",
        async () => {
          await opOk(["context", "use", "--none"]);
          const path = join(dir, "spread.yaml");
          await Deno.writeTextFile(
            path,
            `name: spread\nx-context: lab\nservices:\n  web:\n    image: ${IMAGE}\n` +
              `    command: ["sh", "-c", "while true; do echo tick; sleep 1; done"]\n` +
              `    deploy:\n      replicas: 3\n    stop_grace_period: 1s\n`,
          );
          const started = performance.now();
          const deployed = await opOk(["deploy", "-f", path, "-y", "--monitor", "1s", "--json"]);
          opSeconds = (performance.now() - started) / 1000;
          assert.equal(lastOutcome<OutcomeJson>(deployed.stdout).status, "succeeded", deployed.stdout);
          // Without x-context and with no current context, the operator namespace has no Machine to talk to.
          const bare = await op(["ps"]);
          assert.equal(bare.code, 1);
          assert.match(
            bare.stderr,
            /^error\[unavailable\]: Cannot reach ployzd at ".*operator-run\/ployz\.sock"/,
          );
          await opOk(["context", "use", "lab"]);
          // The same shape of Deploy from m1's own socket, for the ratio.
          const fromM1 = join(dir, "spread_m1.yaml");
          await Deno.writeTextFile(
            fromM1,
            (await Deno.readTextFile(path)).replace("name: spread\nx-context: lab\n", "name: local\n"),
          );
          const localStart = performance.now();
          const local = await lab.on("m1", ["deploy", "-f", fromM1, "-y", "--monitor", "1s", "--json"]);
          const localSeconds = (performance.now() - localStart) / 1000;
          assert.equal(local.code, 0, local.stderr);
          console.log(
            `Deploy of 3 replicas on 3 Machines: ${
              opSeconds.toFixed(2)
            } s over SSH from the operator namespace, ` +
              `${localSeconds.toFixed(2)} s from m1's socket (ratio ${
                (opSeconds / localSeconds).toFixed(2)
              })`,
          );
        },
      );

      await t.step(
        "a build: Service deployed from the operator namespace, which runs no Docker: built on m1, copied to m2, m3",
        async () => {
          const project = join(dir, "built");
          await Deno.mkdir(join(project, "web"), { recursive: true });
          await Deno.writeTextFile(
            join(project, "web", "Dockerfile"),
            `FROM ${IMAGE}\nCOPY note.txt /note.txt\n`,
          );
          await Deno.writeTextFile(join(project, "web", "note.txt"), "built over ssh\n");
          const path = join(project, "compose.yaml");
          await Deno.writeTextFile(
            path,
            `name: built\nx-context: lab\nservices:\n  web:\n    build: ./web\n` +
              `    command: ["sleep", "3600"]\n    deploy:\n      replicas: 3\n    stop_signal: SIGKILL\n`,
          );
          const deployed = await opOk(["deploy", "-f", path, "-y", "--monitor", "1s", "--json"]);
          assert.equal(lastOutcome<OutcomeJson>(deployed.stdout).status, "succeeded", deployed.stdout);
          const built = deployed.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
            .filter((l) => l.type === "build" && l.build.type === "built");
          assert.deepEqual(
            built.map((l) => [l.build.service, l.build.built]),
            [["web", true]],
            deployed.stdout,
          );
          for (const m of ["m1", "m2", "m3"]) {
            const id = (await lab.docker(m, ["ps", "-q", "--filter", "label=ployz.project=built"])).stdout
              .trim();
            assert.ok(id !== "", `a built container runs on ${m}`);
            const note = await lab.docker(m, ["exec", id.split("\n")[0], "cat", "/note.txt"]);
            assert.equal(note.stdout, "built over ssh\n", note.stderr);
          }
        },
      );

      await t.step("ls, ps, inspect, top and logs -f see all three Machines", async () => {
        const ls = JSON.parse((await opOk(["ls", "--json"])).stdout);
        const web = ls.services.find((s: { project: string; service: string }) =>
          s.project === "spread" && s.service === "web"
        );
        assert.deepEqual([web.running, web.total, web.machines], [3, 3, ["m1", "m2", "m3"]]);
        assert.deepEqual(ls.failures, []);
        const ps = JSON.parse((await opOk(["ps", "spread", "--json"])).stdout);
        assert.deepEqual(
          ps.machines.map((m: { machine_name: string; containers: unknown[] }) =>
            `${m.machine_name}:${m.containers.length}`
          ).sort(),
          ["m1:1", "m2:1", "m3:1"],
        );
        const narrowed = JSON.parse((await opOk(["ps", "spread", "--machine", "m2", "--json"])).stdout);
        assert.deepEqual(narrowed.machines.map((m: { machine_name: string }) => m.machine_name), ["m2"]);
        const inspected = JSON.parse((await opOk(["inspect", "spread/web", "--json"])).stdout);
        assert.deepEqual(inspected.containers.map((c: { machine_name: string }) => c.machine_name).sort(), [
          "m1",
          "m2",
          "m3",
        ]);
        const machines = JSON.parse((await opOk(["machine", "ls", "--json"])).stdout).machines;
        assert.deepEqual(machines.map((m: { name: string }) => m.name).sort(), ["m1", "m2", "m3"]);
        const metrics = await opOk(["metrics", "spread/web", "--since", "1h", "--json"]);
        assert.ok(metrics.stdout.length > 0, "metrics answered");
        const top = JSON.parse((await opOk(["top", "--json"])).stdout);
        assert.ok(JSON.stringify(top).includes("m3"), `top names m3: ${JSON.stringify(top).slice(0, 400)}`);

        // logs -f: one SSH connection carries three open tails; lines from every Machine arrive, then it is stopped.
        const follow = new Deno.Command("ip", {
          args: [
            "netns",
            "exec",
            opNs,
            join(ROOT, "bin", "ployz"),
            "logs",
            "spread/web",
            "-f",
            "--json",
            "-n",
            "5",
          ],
          env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", ...operatorEnv },
          clearEnv: true,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const stderr = new Response(follow.stderr).text();
        const seen = new Set<string>();
        let live = 0;
        const deadline = setTimeout(() => follow.kill("SIGTERM"), 60_000);
        let buffered = "";
        for await (const chunk of follow.stdout.pipeThrough(new TextDecoderStream())) {
          buffered += chunk;
          const lines = buffered.split("\n");
          buffered = lines.pop() ?? "";
          for (const line of lines) {
            const frame = JSON.parse(line);
            if (frame.type !== "line") continue;
            seen.add(frame.machine_name);
            if (seen.size === 3) live++;
          }
          if (seen.size === 3 && live >= 6) {
            follow.kill("SIGTERM");
            break;
          }
        }
        clearTimeout(deadline);
        await follow.status;
        assert.deepEqual([...seen].sort(), ["m1", "m2", "m3"], await stderr);
      });

      await t.step(
        "restart: one slot at a time, health-gated, the same containers and Deployment after",
        async () => {
          type Row = {
            "machine_name": string;
            containers: { id: string; slot: string; deployment: string }[];
          };
          const before = JSON.parse((await opOk(["ps", "spread", "--json"])).stdout).machines as Row[];
          const restarted = await opOk(["restart", "spread/web", "--monitor", "1s", "--json"]);
          const lines = restarted.stdout.trim().split("\n").map((l) => JSON.parse(l));
          const outcome = lines.at(-1);
          assert.equal(outcome.status, "succeeded", restarted.stdout);
          assert.deepEqual(
            outcome.steps.map((s: { slot: string; status: string }) => `${s.slot}:${s.status}`),
            ["1:restarted", "2:restarted", "3:restarted"],
          );
          // One at a time: each slot's "running" step comes after the previous slot ended.
          const order = lines.filter((l) => l.type === "step").map((l) => `${l.slot}:${l.status}`);
          assert.deepEqual(order, [
            "1:running",
            "1:restarted",
            "2:running",
            "2:restarted",
            "3:running",
            "3:restarted",
          ]);
          const after = JSON.parse((await opOk(["ps", "spread", "--json"])).stdout).machines as Row[];
          const ids = (rows: Row[]): string[] =>
            rows.flatMap((m) => m.containers.map((c) => `${c.id}/${c.deployment}`)).sort();
          assert.deepEqual(ids(after), ids(before), "restart keeps the containers and their Deployment");
        },
      );

      await t.step("exec: a TTY, stdin, stderr and the exit code, over the same SSH connection", async () => {
        const ployz = join(ROOT, "bin", "ployz");
        const env = Object.entries(operatorEnv).map(([k, v]) => `${k}='${v}'`).join(" ");
        // script(1) gives the CLI a terminal, as an operator's shell would.
        const inPty = await run("ip", [
          "netns",
          "exec",
          opNs,
          "script",
          "-qefc",
          `env ${env} ${ployz} exec spread/web/2 -- sh -c 'tty; echo in-$((40+2)); exit 3'`,
          "/dev/null",
        ]);
        assert.equal(inPty.code, 3, `the exit code passes through: ${inPty.stdout}${inPty.stderr}`);
        assert.match(inPty.stdout, /\/dev\/pts\/\d+/, "the command ran with a TTY");
        assert.match(inPty.stdout, /in-42/);
        const piped = await run("ip", [
          "netns",
          "exec",
          opNs,
          "sh",
          "-c",
          `printf 'hello\\nworld\\n' | ${ployz} exec spread/web --machine m3 -- sh -c 'cat; echo err >&2; hostname'`,
        ], operatorEnv);
        assert.equal(piped.code, 0, piped.stderr);
        assert.match(piped.stdout, /^hello\nworld\n/, "stdin reached the command, without a TTY");
        assert.equal(piped.stderr.trim(), "err", "stderr stays stderr");
        const missing = await op(["exec", "spread/web/9", "--", "true"]);
        assert.equal(missing.code, 1);
        assert.match(missing.stderr, /^error\[not_found\]: No running container of "spread\/web" slot 9/);
      });

      await t.step(
        "figures: ps over SSH vs on m1's socket, connection set-up apart, and the per-call ssh alternative",
        async () => {
          // In-process, so the connection's set-up and its steady state are timed apart; ssh runs in the operator
          // namespace through a one-line wrapper.
          const sshInOp = join(dir, "ssh-in-op");
          await Deno.writeTextFile(sshInOp, `#!/bin/sh\nexec ip netns exec ${opNs} ssh "$@"\n`, {
            mode: 0o755,
          });
          const psOnce = async (entry: MachineClient): Promise<number> => {
            const started = performance.now();
            const contract = await entry.describeContract();
            const listed = await entry.listMachines();
            await Promise.all(listed.machines.map((m) => {
              const client = m.id === contract.machine_id ? entry : viaEntry(entry, m.id, { name: m.name });
              return client.listContainers({});
            }));
            return performance.now() - started;
          };
          const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
          const steady = async (entry: MachineClient, n: number): Promise<number> => {
            const times: number[] = [];
            for (let i = 0; i < n; i++) times.push(await psOnce(entry));
            return median(times);
          };
          const local = connectMachine({ socketPath: join(runDir(m1), "ployz.sock") });
          await psOnce(local);
          const onSocket = await steady(local, 20);
          local.close();
          const choice = chooseConnection({
            connectFlag: url,
            lookup: () => undefined,
            defaultSocket: "/nowhere",
          });
          const setupStart = performance.now();
          const overSsh = openConnection(choice, {
            configFile: operatorEnv.PLOYZ_SSH_CONFIG,
            sshProgram: sshInOp,
          });
          // The first call pays for ssh's handshake and ployzd's start on the host.
          await overSsh.describeContract();
          const setup = performance.now() - setupStart;
          await psOnce(overSsh);
          const mux = await steady(overSsh, 20);
          overSsh.close();
          // The alternative: one ssh session (and one ployzd start on the host) per call, over a ControlMaster.
          const controlPath = join(dir, "cm-%C");
          const master = [
            "-o",
            "ControlMaster=auto",
            "-o",
            `ControlPath=${controlPath}`,
            "-o",
            "ControlPersist=60",
          ];
          const perCall = connectMachine({
            fetch: stdioFetch({
              cmd: sshInOp,
              args: [
                ...master,
                ...sshArgs(`root@${m1.underlayAddress}`, "exec ployzd dial-stdio", {
                  configFile: operatorEnv.PLOYZ_SSH_CONFIG,
                  port: SSH_PORT,
                }),
              ],
            }),
          });
          await psOnce(perCall);
          // Three rounds where the others take 20: each round here is five ssh sessions, each starting ployzd.
          const controlMaster = await steady(perCall, 3);
          perCall.close();
          await run(sshInOp, [
            "-F",
            operatorEnv.PLOYZ_SSH_CONFIG,
            "-o",
            `ControlPath=${controlPath}`,
            "-p",
            String(SSH_PORT),
            "-O",
            "exit",
            `root@${m1.underlayAddress}`,
          ]);
          // Whole commands, as an operator runs them (each starts deno, and the SSH one its connection).
          const wall = async (f: () => Promise<RunResult>): Promise<number> => {
            const times: number[] = [];
            for (let i = 0; i < 3; i++) {
              const started = performance.now();
              const r = await f();
              assert.equal(r.code, 0, r.stderr);
              times.push(performance.now() - started);
            }
            return median(times);
          };
          const cliSsh = await wall(() => op(["ps"]));
          const cliSocket = await wall(() => lab.on("m1", ["ps"]));
          console.log(
            `ps (DescribeContract, ListMachines, 3 ListContainers), median: ${
              onSocket.toFixed(1)
            } ms on m1's socket, ` +
              `${mux.toFixed(1)} ms over one SSH connection (ratio ${(mux / onSocket).toFixed(2)}); ` +
              `connection set-up (ssh, ployzd start, one call) ${setup.toFixed(0)} ms; ` +
              `one ssh session per call over a ControlMaster: ${controlMaster.toFixed(0)} ms ` +
              `(${(controlMaster / onSocket).toFixed(1)}x). Whole \`ployz ps\`: ${
                cliSsh.toFixed(0)
              } ms over SSH, ` +
              `${cliSocket.toFixed(0)} ms on m1 (ratio ${(cliSsh / cliSocket).toFixed(2)})`,
          );
        },
      );

      await t.step(
        "the SSH connection cut mid-Deploy: an honest Outcome, then the re-run resumes",
        async () => {
          const path = join(dir, "cut.yaml");
          await Deno.writeTextFile(
            path,
            `name: cut\nservices:\n  web:\n    image: ${IMAGE}\n    command: ["sleep", "3600"]\n` +
              `    deploy:\n      replicas: 3\n    stop_grace_period: 1s\n` +
              `  after:\n    image: ${IMAGE}\n    command: ["sleep", "3600"]\n    depends_on: [web]\n` +
              `    x-machines: [m1]\n    stop_grace_period: 1s\n`,
          );
          let cut = false;
          const deployed = await followDeploy(
            {
              compose: path,
              // In plan order: the Outcome is the completed prefix, the operation cut and the rest.
              flags: ["--monitor", "2s", "--parallel", "1"],
              env: operatorEnv,
              via: ["ip", "netns", "exec", opNs],
            },
            async (event) => {
              if (!cut && event.type === "step" && event.status === "running" && event.index === 1) {
                cut = true;
                // The per-connection sshd processes are children of the sshd this test started: kill them.
                const children = await run("pgrep", ["-P", String(sshd!.pid)]);
                const pids = children.stdout.trim().split("\n").filter((p) => p !== "");
                assert.ok(pids.length > 0, "a session is open");
                for (const pid of pids) Deno.kill(Number(pid), "SIGKILL");
              }
            },
          );
          assert.ok(cut, "the connection was cut while operation 2 ran");
          assert.equal(deployed.code, 1, `a partial Deploy exits 1: ${deployed.stderr}`);
          const outcome = lastOutcome<OutcomeJson>(deployed.transcript);
          assert.equal(outcome.status, "partial");
          assert.deepEqual(outcome.completed.map((op) => `${op.kind} ${op.service}@${op.machine_name}`), [
            "create web@m1",
          ]);
          assert.equal(outcome.failed?.op.machine_name, "m2");
          assert.equal(outcome.failed?.error.code, "unavailable", outcome.failed?.error.message);
          assert.equal(
            outcome.failed?.outcome_unknown,
            true,
            "sent, no answer: its outcome is unknown, not failed",
          );
          assert.ok(outcome.not_attempted.length > 0, "the rest is named as never attempted");
          console.log(
            `SSH cut mid-deploy: failed ${outcome.failed?.op.kind} on m2 with ${outcome.failed?.error.message}`,
          );

          const again = await opOk(["deploy", "-f", path, "-y", "--monitor", "1s", "--json"]);
          const finished = lastOutcome<OutcomeJson>(again.stdout);
          assert.equal(finished.status, "succeeded", again.stdout);
          const ps = JSON.parse((await opOk(["ps", "cut", "--json"])).stdout);
          const placed = ps.machines.flatMap((
            m: { machine_name: string; containers: { service: string; slot: string }[] },
          ) => m.containers.map((c) => `${c.service}/${c.slot}@${m.machine_name}`)).sort();
          assert.deepEqual(placed, ["after/1@m1", "web/1@m1", "web/2@m2", "web/3@m3"]);
        },
      );
      await t.step(
        "machine init over --connect saves a context for the new Cluster; the next command needs no flag",
        async () => {
          const fresh = `ssh://root@${m1.underlayAddress}:${OUTSIDE_PORT}`;
          const init = await opOk(["--connect", fresh, "machine", "init", "--cluster", "solo", "--json"]);
          assert.equal(JSON.parse(init.stdout).context, "solo", init.stdout);
          const listed = JSON.parse((await opOk(["context", "ls", "--json"])).stdout);
          assert.deepEqual(listed.active, { source: "context use", context: "solo", url: fresh });
          const machines = JSON.parse((await opOk(["machine", "ls", "--json"])).stdout).machines;
          assert.equal(machines.length, 1, "the new Cluster has only the Machine just initialized");
        },
      );
      void sshdLog;
    } finally {
      if (sshd !== undefined) await stopChild(sshd);
      await run("ip", ["netns", "del", opNs]);
    }
  },
}));
