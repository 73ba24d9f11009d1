// Hostile Compose input: each one is refused with a ComposeError naming the cause, in linear time. The time to
// refusal is printed for the record, never asserted (CI never gates on time).
import assert from "node:assert/strict";
import fc from "fast-check";
import { ComposeError } from "./issue.ts";
import { loadCompose } from "./load.ts";
import { MAX_COMPOSE_BYTES, MAX_NODE_VISITS, MAX_REPLICAS, readBoundedFile } from "./limits.ts";
import { parseEnvFile } from "./env_file.ts";
import { loadText, problems } from "./test_helpers.ts";

const SERVICE = "services:\n  web:\n    image: busybox\n";

function timed(name: string, load: () => unknown): ComposeError {
  const started = performance.now();
  try {
    load();
  } catch (error) {
    const ms = performance.now() - started;
    console.log(`  refused ${name} in ${ms.toFixed(0)} ms`);
    assert.ok(error instanceof ComposeError, `${name}: expected a ComposeError, got ${error}`);
    return error;
  }
  assert.fail(`${name}: expected a refusal`);
}

function mergeBomb(levels: number): string {
  let text = "x-a0: &a0 {k: v}\n";
  for (let i = 1; i < levels; i++) text += `x-a${i}: &a${i} {<<: [*a${i - 1}, *a${i - 1}]}\n`;
  return text;
}

Deno.test("a merge-key bomb is expanded once per anchor, not once per path", () => {
  // 2^24 paths to the one key "k"; before, this took tens of seconds.
  const text = mergeBomb(25) + SERVICE + "    labels: {<<: *a24}\n    command: 42\n";
  const error = timed("merge-key bomb", () => loadText(text));
  assert.match(error.message, /services\.web\.command: expected a string or a list of strings/);
  // The merge itself was read: the label came through once.
  const ok = loadText(mergeBomb(25) + SERVICE + "    labels: {<<: *a24}\n");
  assert.deepEqual(ok.project.services.web.labels, { k: "v" });
});

Deno.test("aliases multiplying a large mapping hit the visit limit", () => {
  const big = Array.from({ length: 5000 }, (_, i) => `k${i}: v`).join(", ");
  const services = Array.from({ length: 100 }, (_, i) => `  s${i}: {image: busybox, labels: *big}\n`).join(
    "",
  );
  const error = timed("alias amplification", () => loadText(`x-big: &big {${big}}\nservices:\n${services}`));
  assert.match(error.message, new RegExp(`more than ${MAX_NODE_VISITS} keys and items`));
});

Deno.test("a compose file above the size limit is refused before it is parsed", () => {
  const services = Array.from({ length: 64_000 }, (_, i) => `  s${i}: {image: busybox}\n`).join("");
  const error = timed("64k service keys", () => loadText(`services:\n${services}`));
  assert.match(error.message, new RegExp(`bytes, more than the limit of ${MAX_COMPOSE_BYTES}`));
});

Deno.test("many keys in one mapping are checked for duplicates in one pass", () => {
  const labels = Array.from({ length: 6000 }, (_, i) => `      l${i}: v\n`).join("");
  const error = timed(
    "6k labels and a duplicate",
    () => loadText(`${SERVICE}    labels:\n${labels}      l1: again\n`),
  );
  assert.match(error.message, /:6005:7: services\.web\.labels\.l1: Duplicate key/);
});

Deno.test("too many services are refused with the count and the limit", () => {
  const services = Array.from({ length: 1500 }, (_, i) => `  s${i}: {image: b}\n`).join("");
  const error = timed("1500 services", () => loadText(`services:\n${services}`));
  assert.match(error.message, /1500 services defined, more than the limit of 1000/);
});

Deno.test("many unset variables give a bounded list of warnings", () => {
  const lines = Array.from({ length: 5000 }, (_, i) => `      - A${i}=$U${i}\n`).join("");
  const started = performance.now();
  const { warnings } = loadText(`${SERVICE}    environment:\n${lines}`);
  console.log(`  loaded 5000 unset variables in ${(performance.now() - started).toFixed(0)} ms`);
  assert.equal(warnings.length, 21);
  assert.match(warnings[0].message, /variable "U0" is not set/);
  assert.match(warnings[20].message, /4980 more variables are not set/);
  timed(
    "5000 unset variables and a bad command",
    () => loadText(`${SERVICE}    environment:\n${lines}    command: 42\n`),
  );
});

Deno.test("a long env_file parses in linear time, and a quote left open over it is refused", () => {
  const env = Array.from({ length: 90_000 }, (_, i) => `K${i}=v${i}`).join("\n");
  const started = performance.now();
  const parsed = parseEnvFile(env, {});
  console.log(`  parsed a 90k-line env file in ${(performance.now() - started).toFixed(0)} ms`);
  assert.equal(Object.keys(parsed.vars).length, 90_000);
  const open = 'A="' + "x\n".repeat(400_000);
  const error = timed(
    "unterminated quote over 400k lines",
    () => loadText(`${SERVICE}    env_file: big.env\n`, { files: { "/proj/big.env": open } }),
  );
  assert.match(error.message, /big\.env:1:1: unterminated " quote in value of "A"/);
  const huge = "A=" + "x".repeat(2 * 1024 * 1024);
  const tooBig = timed(
    "2 MB env file",
    () => loadText(`${SERVICE}    env_file: big.env\n`, { files: { "/proj/big.env": huge } }),
  );
  assert.match(tooBig.message, /cannot read env file "big\.env" for service "web": it is \d+ bytes/);
});

Deno.test("env_file and x-caddy read regular files only: no devices, no /proc", () => {
  for (const path of ["/dev/zero", "/proc/self/environ", "/dev/stdin"]) {
    const error = timed(
      `env_file ${path}`,
      () => loadCompose({ path: "/proj/compose.yaml", text: `${SERVICE}    env_file: ${path}\n`, env: {} }),
    );
    assert.match(
      error.message,
      new RegExp(`cannot read env file "${path}" for service "web": .*not a regular file`),
    );
  }
  assert.throws(() => readBoundedFile("/dev/zero"), /not a regular file/);
  const caddy = timed("x-caddy /etc/passwd", () => loadText(`${SERVICE}    x-caddy: /etc/passwd\n`));
  assert.match(caddy.message, /must be a file inside the compose file's directory/);
  const escape = timed("x-caddy ../x", () => loadText(`${SERVICE}    x-caddy: ../secrets/Caddyfile\n`));
  assert.match(escape.message, /must be a file inside the compose file's directory/);
});

Deno.test("a file larger than the limit is refused by size, before it is read", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = `${dir}/big.env`;
    const file = Deno.openSync(path, { write: true, create: true });
    file.truncateSync(5 * 1024 * 1024);
    file.close();
    const error = timed(
      "5 MB sparse env file",
      () => loadCompose({ path: `${dir}/compose.yaml`, text: `${SERVICE}    env_file: big.env\n`, env: {} }),
    );
    assert.match(error.message, /it is 5242880 bytes, more than the limit of 1048576/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("deeply nested interpolation is a Compose error, not a RangeError", () => {
  const nested = (depth: number): string => "${U:-".repeat(depth) + "x" + "}".repeat(depth);
  const error = timed(
    "${U:-…} nested 15k deep",
    () => loadText(`${SERVICE}    environment: {A: "${nested(15_000)}"}\n`),
  );
  assert.match(error.message, /interpolation nested more than 32 levels deep/);
  const parsed = parseEnvFile(`A=${nested(50_000)}\n`, {});
  assert.match(parsed.problems[0].message, /interpolation nested more than 32 levels deep/);
  assert.equal(
    loadText(`${SERVICE}    environment: {A: "${nested(30)}"}\n`).project.services.web.environment.A,
    "x",
  );
});

Deno.test("replicas are bounded", () => {
  const error = timed("replicas: 1e9", () => loadText(`${SERVICE}    deploy: {replicas: 1e9}\n`));
  assert.match(error.message, new RegExp(`expected a whole number from 1 to ${MAX_REPLICAS}`));
  timed("scale: 100000", () => loadText(`${SERVICE}    scale: 100000\n`));
});

Deno.test("env-file problems never echo the line or the value", () => {
  const secret = "hunter2-top-secret";
  const parsed = parseEnvFile(`PASSWORD ${secret}\nTOKEN=${secret}$\nOK="${secret}\\$(\n`, {});
  assert.equal(parsed.problems.length, 3);
  for (const problem of parsed.problems) assert.ok(!problem.message.includes(secret), problem.message);
  const list = problems(`${SERVICE}    env_file: .env\n`, {
    files: { "/proj/.env": `PASSWORD ${secret}\n` },
  });
  assert.ok(list.every((issue) => !issue.message.includes(secret)));
});

Deno.test("command and entrypoint follow the Compose schema: a string or a list of strings", () => {
  const error = timed("command: 42", () => loadText(`${SERVICE}    command: 42\n`));
  assert.match(
    error.message,
    /:4:14: services\.web\.command: expected a string or a list of strings, got the number 42/,
  );
  const list = problems(`${SERVICE}    entrypoint: [sh, 1]\n`);
  assert.match(list[0].message, /expected a string, got the number 1/);
  assert.deepEqual(loadText(`${SERVICE}    command: ["sleep", "10"]\n`).project.services.web.command, [
    "sleep",
    "10",
  ]);
});

Deno.test("deploy.mode global with replicas is a contradiction, refused", () => {
  const list = problems(`${SERVICE}    deploy: {mode: global, replicas: 3}\n`);
  assert.match(list[0].message, /"deploy.replicas" cannot be set with "deploy.mode: global"/);
  assert.equal(list[0].line, 4);
});

const yamlValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom("${A}", "${B:-x}", "$$", "${", "${C:?no}", "*a", "&a x", "<<", "./x", "/dev/zero", "1e9"),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.string(), fc.constantFrom("image", "command", "ports", "volumes", "environment", "deploy")),
      tie("value"),
      { maxKeys: 4 },
    ),
  ),
})).value;

Deno.test("random YAML never throws anything but a ComposeError", () => {
  const keys = [
    "image",
    "command",
    "entrypoint",
    "ports",
    "volumes",
    "environment",
    "env_file",
    "deploy",
    "healthcheck",
    "labels",
    "depends_on",
    "x-ports",
    "x-caddy",
    "x-pre_deploy",
    "ulimits",
    "logging",
    "secrets",
    "profiles",
  ];
  const service = fc.dictionary(fc.constantFrom(...keys), yamlValue, { maxKeys: 6 });
  const project = fc.record({
    services: fc.dictionary(fc.constantFrom("web", "db", "Bad Name", "x"), service, { maxKeys: 3 }),
    volumes: yamlValue,
  });
  const check = (text: string): void => {
    try {
      loadText(text, { env: { A: "1" } });
    } catch (error) {
      if (!(error instanceof ComposeError)) throw error;
    }
  };
  fc.assert(fc.property(project, (value) => check(JSON.stringify(value))), { numRuns: 300 });
  fc.assert(fc.property(yamlValue, (value) => check(JSON.stringify(value))), { numRuns: 300 });
  fc.assert(fc.property(fc.string({ maxLength: 200 }), check), { numRuns: 300 });
  const fragments = fc.array(
    fc.constantFrom(
      "services:",
      "\n",
      "  ",
      "- ",
      "web:",
      "image: x",
      "&a ",
      "*a",
      "<<: ",
      "{",
      "}",
      "[",
      "]",
      ": ",
    ),
    { maxLength: 40 },
  );
  fc.assert(fc.property(fragments, (parts) => check(parts.join(""))), { numRuns: 500 });
});
