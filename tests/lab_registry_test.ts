// Images from a real registry across a 3-Machine lab: Debian's docker-registry in the lab's underlay namespace,
// serving TLS (a CA made here, trusted by each lab dockerd through certs.d) behind htpasswd basic auth. One lab,
// in order: a Deploy without credentials is refused `unauthenticated`, naming the registry and never a password;
// `ployz registry login` saves them on the operator's side; a Project with two Services deploys, every Machine
// pulling the same digest (Preview `name:tag → sha256:…`, `ps` shows it); the password appears in no ployzd log,
// store file, `ployz logs` output or Deployment record; a tag moved in the registry is a replacement; with the
// registry stopped, a Machine lacking the image copies it from a peer and the plan says why; `image ls` lists the
// digests and users, and `image prune` removes only the image nothing uses any more. Then faults, against a second,
// plain registry that each lab dockerd lists in `insecure-registries` (one download attempt per layer, so a dropped
// transfer fails at once rather than after Docker's retries), its traffic throttled so pulls are in flight: the
// registry stopped mid-pull fails the pull `unavailable` and the Outcome lists it; a ployzd restarted mid-pull
// leaves nothing a re-run cannot finish.
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { IMAGE } from "./support/docker.ts";
import { type Lab, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";
import { startRegistry } from "./support/registry.ts";
import { ROOT, run } from "./support/spawn.ts";

const USER = "deployer";
const PASSWORD = "Reg-Pa55word-never-logged-7f3a";
const MACHINES = ["m1", "m2", "m3"];

interface PsJson {
  machines: { "machine_name": string; containers: { project: string; service: string; image: string }[] }[];
}

/** `ployz args` on m1 with `stdin` as its standard input. */
async function ployzWithStdin(
  lab: Lab,
  args: string[],
  stdin: string,
): Promise<{ code: number; out: string }> {
  const out = await run(join(ROOT, "bin", "ployz"), args, lab.envOn("m1"), stdin);
  return { code: out.code, out: out.stdout + out.stderr };
}

/** A new image on m1, `IMAGE` plus a file holding `content`, committed as `ref`. */
async function commitImage(lab: Lab, ref: string, content: string | Uint8Array): Promise<void> {
  const name = `commit-${crypto.randomUUID().slice(0, 8)}`;
  const file = join(lab.dir, `${name}.txt`);
  if (typeof content === "string") await Deno.writeTextFile(file, content);
  else await Deno.writeFile(file, content);
  for (
    const args of [
      ["create", "--name", name, IMAGE, "true"],
      ["cp", file, `${name}:/version`],
      ["commit", name, ref],
      ["rm", name],
    ]
  ) {
    const done = await lab.docker("m1", args);
    assert.equal(done.code, 0, `docker ${args.join(" ")}: ${done.stderr}`);
  }
}

/** Pushes `ref` from m1 with the registry login in `config`, then drops m1's registry names for it. */
async function push(lab: Lab, ref: string, config: string): Promise<string> {
  const socket = ["-H", `unix://${join(lab.dir, "m1", "docker.sock")}`];
  const pushed = await run("docker", [...socket, "push", ref], { DOCKER_CONFIG: config });
  assert.equal(pushed.code, 0, pushed.stderr);
  const digest = pushed.stdout.match(/digest: (sha256:[a-f0-9]{64})/)?.[1];
  assert.ok(digest !== undefined, pushed.stdout);
  // m1 must pull like the others: it keeps the image only under names no registry knows.
  const repo = ref.slice(0, ref.lastIndexOf(":"));
  await lab.docker("m1", ["rmi", ref]);
  await lab.docker("m1", ["rmi", `${repo}@${digest}`]);
  return digest;
}

/** Every file under `dir` (skipping Docker's data roots) whose bytes contain `needle`. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const bytes = new TextEncoder().encode(needle);
  const found: string[] = [];
  const walk = async (path: string): Promise<void> => {
    for await (const entry of Deno.readDir(path)) {
      const full = join(path, entry.name);
      if (entry.isDirectory && entry.name !== "data" && entry.name !== "exec") await walk(full);
      else if (entry.isFile) {
        const content = await Deno.readFile(full).catch(() => new Uint8Array());
        if (indexOf(content, bytes) >= 0) found.push(full);
      }
    }
  };
  await walk(dir);
  return found;
}

/**
 * Starts `ployz deploy --json` of `compose` on m1; `pulling` resolves once some Machine reports pulled bytes, `done`
 * with the exit code and the Outcome event.
 */
function deployJson(lab: Lab, compose: string): {
  pulling: Promise<void>;
  done: Promise<{ code: number; outcome: Record<string, unknown> | undefined; text: string }>;
} {
  const child = new Deno.Command(join(ROOT, "bin", "ployz"), {
    args: ["deploy", "-f", compose, "-y", "--json", "--monitor", "0s", "--parallel", "3"],
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", ...lab.envOn("m1") },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let seen: () => void = () => {};
  const pulling = new Promise<void>((resolve) => seen = resolve);
  const done = (async () => {
    let text = "";
    let outcome: Record<string, unknown> | undefined;
    const errText = new Response(child.stderr).text();
    let buffer = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      let at: number;
      while ((at = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        text += line + "\n";
        const event = JSON.parse(line);
        if (event.type === "outcome") outcome = event.outcome;
        // "ref: 0/2 layers, 1.3 MB of 6.0 MB, 0.8 s": bytes are moving.
        if (event.phase === "pulling_image" && / layers, (?!0\.0 MB)[0-9.]+ MB/.test(event.detail ?? "")) {
          seen();
        }
      }
    }
    const code = (await child.status).code;
    seen();
    return { code, outcome, text: text + (await errText) };
  })();
  return { pulling, done };
}

/** Throttles what the lab's underlay namespace sends over its bridge (the registry's answers), or lifts it. */
async function throttle(namespace: string, on: boolean): Promise<void> {
  const args = on
    ? [
      "netns",
      "exec",
      namespace,
      "tc",
      "qdisc",
      "replace",
      "dev",
      "br0",
      "root",
      "tbf",
      "rate",
      "4mbit",
      "burst",
      "32kb",
      "latency",
      "5s",
    ]
    : ["netns", "exec", namespace, "tc", "qdisc", "del", "dev", "br0", "root"];
  const done = await run("ip", args);
  assert.equal(done.code, 0, `ip ${args.join(" ")}: ${done.stderr}`);
}

/** `docker login` to the test registry against m1's dockerd, its credential kept in `config` (for a push). */
async function dockerLogin(lab: Lab, registry: string, config: string): Promise<void> {
  const login = await run(
    "docker",
    ["-H", `unix://${join(lab.dir, "m1", "docker.sock")}`, "login", "-u", USER, "--password-stdin", registry],
    { DOCKER_CONFIG: config },
    PASSWORD,
  );
  assert.equal(login.code, 0, `docker login to the test registry: ${login.stderr}`);
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

Deno.test(needs(["lab", "command:docker-registry", "command:htpasswd", "command:openssl", "command:curl"], {
  name:
    "a Project from a TLS registry with basic auth deploys on 3 Machines, one digest, no credential anywhere",
  async fn() {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const plainHost = `192.0.2.1:${port + 1}`;
    await using lab = await startLab("rg", 3, {
      upArgs: ["--insecure-registry", plainHost, "--max-download-attempts", "1"],
    });
    const namespace = `${lab.name}-u`;
    await using registry = await startRegistry({
      address: "192.0.2.1",
      port,
      namespace,
      tls: true,
      user: { name: USER, password: PASSWORD },
      trustedByDocker: true,
    });
    const reg = registry.host;
    const pushConfig = join(lab.dir, "push-docker-config");
    await Deno.mkdir(pushConfig);
    await dockerLogin(lab, reg, pushConfig);

    const web = `${reg}/shop/web:1`;
    const api = `${reg}/shop/api:1`;
    await commitImage(lab, web, "web 1");
    await commitImage(lab, api, "api 1");
    const webDigest = await push(lab, web, pushConfig);
    const apiDigest = await push(lab, api, pushConfig);
    await Deno.remove(pushConfig, { recursive: true });

    const compose = join(lab.dir, "shop.yaml");
    await Deno.writeTextFile(
      compose,
      `name: shop
services:
  web:
    image: ${web}
    command: ["sh", "-c", "echo web up; cat /version; sleep 3600"]
    deploy:
      replicas: 3
    stop_grace_period: 1s
  api:
    image: ${api}
    pull_policy: always
    command: ["sleep", "3600"]
    stop_grace_period: 1s
`,
    );
    const deploy = (...extra: string[]) =>
      lab.on("m1", ["deploy", "-f", compose, "-y", "--monitor", "1s", "--parallel", "3", ...extra]);

    // No credentials anywhere on the operator's side: refused before anything runs.
    const refused = await deploy();
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /error\[unauthenticated\]: .*registry "192\.0\.2\.1:\d+"/);
    assert.ok(!(refused.stdout + refused.stderr).includes(PASSWORD));

    const saved = await ployzWithStdin(
      lab,
      ["registry", "login", reg, "--username", USER, "--password-stdin"],
      PASSWORD,
    );
    assert.equal(saved.code, 0, saved.out);
    const configDb = join(lab.dir, "operator", "config.db");
    assert.equal((await Deno.stat(configDb)).mode! & 0o777, 0o600);

    // Cold: every Machine pulls; the Preview names each digest.
    const cold = await deploy();
    assert.equal(cold.code, 0, cold.stdout + cold.stderr);
    assert.ok(cold.stdout.includes(`${web} → ${webDigest}`), cold.stdout);
    assert.ok(cold.stdout.includes(`${api} → ${apiDigest}`), cold.stdout);
    console.log(`cold deploy:\n${cold.stdout}`);
    const pulls = cold.stdout.match(/pull image "[^"]+" on "m\d"/g) ?? [];
    assert.equal(new Set(pulls).size, 4, cold.stdout); // web on m1..m3, api on one
    const ps = async (): Promise<PsJson> => JSON.parse((await lab.on("m1", ["ps", "shop", "--json"])).stdout);
    const images = (await ps()).machines.flatMap((m) =>
      m.containers.map((c) => `${c.service}@${m.machine_name}=${c.image}`)
    ).sort();
    assert.equal(images.length, 4, images.join("\n"));
    for (const line of images) {
      assert.ok(
        line.endsWith(line.startsWith("web@") ? `${web}@${webDigest}` : `${api}@${apiDigest}`),
        line,
      );
    }
    for (const m of MACHINES) {
      const held = await lab.docker(m, [
        "image",
        "inspect",
        "--format",
        "{{json .RepoDigests}}",
        `${web}@${webDigest}`,
      ]);
      assert.equal(held.code, 0, `${m} holds web's digest: ${held.stderr}`);
    }

    const inspected = await lab.on("m1", ["inspect", "shop/web"]);
    assert.ok(inspected.stdout.includes(`image:    ${web}@${webDigest}`), inspected.stdout);
    const rows = inspected.stdout.split("\n").filter((l) => /^[123] +shop-web-/.test(l));
    assert.equal(rows.length, 3, inspected.stdout);
    for (const row of rows) assert.ok(row.includes(webDigest.slice(0, 19)), row);

    // Warm: nothing to pull, nothing to do.
    const warm = await deploy();
    assert.equal(warm.code, 0, warm.stdout + warm.stderr);
    assert.match(warm.stdout, /Nothing to do/);

    // The password is nowhere but the operator's Config Store.
    // The Observe Store takes container output a moment after it is written.
    const logs = await eventually(30_000, "ployz logs shows web's output", async () => {
      const out = await lab.on("m1", ["logs", "shop/web"]);
      return /web up/.test(out.stdout) ? out : undefined;
    });
    assert.ok(!logs.stdout.includes(PASSWORD) && !logs.stderr.includes(PASSWORD));
    // The Config Store (its file and write-ahead log) is the one place they are kept.
    const leaked = (await filesContaining(lab.dir, PASSWORD)).filter((f) => !f.startsWith(configDb));
    assert.deepEqual(leaked, []);
    const db = new DatabaseSync(configDb, { readOnly: true });
    try {
      for (const table of ["deployments", "saved_state"]) {
        const rows = JSON.stringify(db.prepare(`SELECT * FROM ${table}`).all());
        assert.ok(rows.length > 2 && !rows.includes(PASSWORD), table);
      }
    } finally {
      db.close();
    }

    // A tag moved in the registry: api (pull_policy: always) is replaced, web (missing) is not.
    const relogin = await ployzWithStdin(
      lab,
      ["registry", "login", reg, "-u", USER, "--password-stdin"],
      PASSWORD,
    );
    assert.equal(relogin.code, 0, relogin.out);
    await Deno.mkdir(pushConfig);
    await dockerLogin(lab, reg, pushConfig);
    await commitImage(lab, api, "api 2");
    const movedDigest = await push(lab, api, pushConfig);
    await Deno.remove(pushConfig, { recursive: true });
    assert.notEqual(movedDigest, apiDigest);
    const moved = await deploy();
    assert.equal(moved.code, 0, moved.stdout + moved.stderr);
    assert.ok(moved.stdout.includes(`${api} → ${movedDigest}`), moved.stdout);
    console.log(`tag moved:\n${moved.stdout}`);
    assert.match(moved.stdout, /replace shop-api-1/);
    assert.doesNotMatch(moved.stdout, /replace shop-web/);

    // Registry stopped: api scaled to 3 needs the moved digest on two more Machines; a peer has it.
    await registry.stop();
    const scaled = compose.replace(".yaml", "-scaled.yaml");
    await Deno.writeTextFile(
      scaled,
      (await Deno.readTextFile(compose)).replace(
        "pull_policy: always\n",
        "pull_policy: always\n    deploy:\n      replicas: 3\n",
      ),
    );
    const fallback = await lab.on("m1", [
      "deploy",
      "-f",
      scaled,
      "-y",
      "--monitor",
      "1s",
      "--parallel",
      "3",
    ]);
    assert.equal(fallback.code, 0, fallback.stdout + fallback.stderr);
    console.log(`registry stopped:\n${fallback.stdout}`);
    assert.match(
      fallback.stdout,
      /copy image "[^"]+" from "m\d" to "m\d" over the mesh: registry "[^"]+" did not answer/,
    );
    assert.match(fallback.stdout, /Registry "[^"]+" did not answer for/);
    // The api container the moved tag replaced is left to its Machine's retire loop, which removes it once
    // every Machine acked the new pointer: asynchronous by design, so wait for it, bounded.
    const want = [1, 2, 3].map(() => `${api}@${movedDigest}`);
    let after: string[] = [];
    await eventually(60_000, "the replaced api container retired", async () => {
      after = (await ps()).machines.flatMap((m) =>
        m.containers.filter((c) => c.service === "api").map((c) => c.image)
      );
      return JSON.stringify(after) === JSON.stringify(want) ? true : undefined;
    }).catch(() => undefined);
    assert.deepEqual(after, want);

    // image ls names digests and users; prune removes only the old api image, on the Machine that ran it.
    const listed = JSON.parse((await lab.on("m1", ["image", "ls", "--json"])).stdout) as {
      machines: {
        "machine_name": string;
        images: { id: string; digests: string[]; owned: boolean; "used_by": string[] }[];
      }[];
    };
    const oldApi = listed.machines.flatMap((m) =>
      m.images.filter((i) => i.digests.some((d) => d.endsWith(apiDigest))).map((i) => ({
        m: m.machine_name,
        i,
      }))
    );
    assert.equal(oldApi.length, 1, JSON.stringify(listed));
    assert.deepEqual(oldApi[0].i.used_by, []);
    assert.ok(oldApi[0].i.owned);
    for (const m of listed.machines) {
      const webImage = m.images.find((i) => i.digests.some((d) => d.endsWith(webDigest)));
      assert.deepEqual(webImage?.used_by, ["shop/web"], m.machine_name);
    }
    const table = await lab.on("m1", ["image", "ls"]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID +TAGS +DIGEST +SIZE +PLOYZ +USED BY +MACHINE$/m);
    assert.match(table.stdout, /shop\/web:1 .* yes +shop\/web +m3$/m);
    const dry = await lab.on("m1", ["image", "prune", "--dry-run"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, new RegExp(`${oldApi[0].m}: remove 1 image\\(s\\)`));
    const pruned = await lab.on("m1", ["image", "prune", "-y"]);
    console.log(`image prune:\n${dry.stdout}${pruned.stdout}`);
    assert.equal(pruned.code, 0, pruned.stdout + pruned.stderr);
    const gone = await lab.docker(oldApi[0].m, ["image", "inspect", oldApi[0].i.id]);
    assert.notEqual(gone.code, 0, "the unused pulled image is gone");
    for (const m of MACHINES) {
      const kept = await lab.docker(m, ["image", "inspect", "--format", "{{.Id}}", IMAGE]);
      assert.equal(kept.code, 0, `${m} keeps the image Ployz did not pull`);
    }
    const running = (await ps()).machines.flatMap((m) => m.containers).length;
    assert.equal(running, 6);

    // Faults, from the plain registry: a 6 MB layer of random bytes, its transfers throttled to 4 Mbit/s.
    await using plain = await startRegistry({ address: "192.0.2.1", port: port + 1, namespace });
    const big = `${plainHost}/load/big:1`;
    const bytes = new Uint8Array(6_000_000);
    for (let i = 0; i < bytes.length; i += 65_536) crypto.getRandomValues(bytes.subarray(i, i + 65_536));
    await commitImage(lab, big, bytes);
    const emptyConfig = join(lab.dir, "plain-docker-config");
    await Deno.mkdir(emptyConfig);
    const bigDigest = await push(lab, big, emptyConfig);
    const bigCompose = join(lab.dir, "load.yaml");
    await Deno.writeTextFile(
      bigCompose,
      `name: load\nservices:\n  big:\n    image: ${big}\n    command: ["sleep", "3600"]\n` +
        `    deploy: {replicas: 3}\n    healthcheck: {disable: true}\n    stop_signal: SIGKILL\n`,
    );
    await throttle(namespace, true);
    try {
      // Registry stopped mid-pull: the pulls fail `unavailable`, and the Outcome says so.
      const first = deployJson(lab, bigCompose);
      await first.pulling;
      await plain.stop();
      const stopped = await first.done;
      assert.notEqual(stopped.code, 0, stopped.text);
      const outcome = stopped.outcome as {
        status: string;
        failed?: { op: { kind: string; ref?: string }; error: { code: string; message: string } };
        also_failed?: { op: { kind: string; ref?: string }; error: { code: string; message: string } }[];
      };
      assert.ok(outcome !== undefined, stopped.text);
      const failures = [outcome.failed, ...(outcome.also_failed ?? [])].filter((f) => f !== undefined);
      assert.ok(
        failures.some((f) =>
          f.op.kind === "pull" && f.error.code === "unavailable" && f.op.ref?.includes(big)
        ),
        stopped.text,
      );
      console.log(
        `registry stopped mid-pull: ${outcome.status}; ${failures.map((f) => f.error.message).join("; ")}`,
      );

      // ployzd of m2 restarted mid-pull: whatever that leaves, a re-run finishes.
      await plain.start();
      const second = deployJson(lab, bigCompose);
      await second.pulling;
      await lab.ok(["lab", "restart", "m2", "--dir", lab.dir]);
      await throttle(namespace, false);
      const interrupted = await second.done;
      console.log(`ployzd of m2 restarted mid-pull: exit ${interrupted.code}`);
      // What the restart left of m2's record of pulled images is whole (or absent), never torn.
      const record = await Deno.readTextFile(join(lab.dir, "m2", "ployz", "pulled_images.json")).catch(() =>
        "{}"
      );
      assert.doesNotThrow(() => JSON.parse(record), record);
    } finally {
      await throttle(namespace, false).catch(() => {});
    }
    const rerun = await lab.on("m1", [
      "deploy",
      "-f",
      bigCompose,
      "-y",
      "--monitor",
      "0s",
      "--parallel",
      "3",
    ]);
    assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
    const loadPs = JSON.parse((await lab.on("m1", ["ps", "load", "--json"])).stdout) as PsJson;
    const bigImages = loadPs.machines.flatMap((m) => m.containers.map((c) => c.image));
    assert.deepEqual(bigImages, [1, 2, 3].map(() => `${big}@${bigDigest}`));
  },
}));
