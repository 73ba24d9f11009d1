// The Compose corpus: realistic multi-Service files in the shapes real projects use, each loaded and compared with
// its golden normalized Project (UPDATE_GOLDEN=1 rewrites them); the bad-input corpus, each refused at the
// file:line:col and key its first line names; and `ployz config` on both, as an operator runs it.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { ComposeError, formatIssue, loadCompose } from "../lib/deploy/mod.ts";
import { CORPUS, corpus, corpusEnv, corpusFiles } from "./support/compose_corpus.ts";
import { ROOT, run } from "./support/spawn.ts";

function relative(text: string): string {
  return text.replaceAll(CORPUS + "/", "");
}

Deno.test("every corpus file loads, and its normalized Project matches the golden file", () => {
  const entries = corpus();
  assert.ok(entries.length >= 12, `the corpus has ${entries.length} entries`);
  const update = Deno.env.get("UPDATE_GOLDEN") === "1";
  const times: string[] = [];
  for (const entry of entries) {
    const started = performance.now();
    const loaded = loadCompose({
      files: corpusFiles(entry),
      env: corpusEnv(entry),
      profiles: entry.profiles,
    });
    times.push(`${entry.name} ${(performance.now() - started).toFixed(1)} ms`);
    const actual = JSON.parse(relative(JSON.stringify({
      project: loaded.project,
      warnings: loaded.warnings.map(formatIssue),
    })));
    const golden = join(CORPUS, "golden", `${entry.name}.json`);
    if (update) {
      Deno.mkdirSync(dirname(golden), { recursive: true });
      Deno.writeTextFileSync(golden, JSON.stringify(actual, null, 2) + "\n");
      continue;
    }
    assert.deepEqual(
      actual,
      JSON.parse(Deno.readTextFileSync(golden)),
      `${entry.name} differs from its golden file`,
    );
  }
  console.log(`  loader time per corpus entry: ${times.join(", ")}`);
});

Deno.test("every bad corpus file is refused at the file:line:col and key its first line names", () => {
  const dir = join(CORPUS, "bad");
  const names = [...Deno.readDirSync(dir)].map((entry) => entry.name).filter((name) => name.endsWith(".yaml"))
    .sort();
  assert.ok(names.length >= 12, `the bad corpus has ${names.length} files`);
  for (const name of names) {
    const path = join(dir, name);
    const expect = /^# expect: (\d+):(\d+) (\S+): (.*)$/m.exec(Deno.readTextFileSync(path));
    assert.ok(expect !== null, `${name} names no expectation`);
    const [, line, column, key, message] = expect;
    try {
      loadCompose({ path, env: {} });
      assert.fail(`${name} loaded`);
    } catch (error) {
      assert.ok(error instanceof ComposeError, `${name}: ${error}`);
      const found = error.issues.find((issue) => issue.path === key);
      assert.ok(found !== undefined, `${name}: no issue at ${key}: ${error.message}`);
      assert.equal(`${found.file}:${found.line}:${found.column}`, `${path}:${line}:${column}`, name);
      assert.ok(found.message.startsWith(message), `${name}: ${found.message}`);
    }
  }
});

Deno.test("ployz config prints the merged Project of -f a -f b with a profile, and every problem otherwise", async () => {
  const ployz = join(ROOT, "bin", "ployz");
  const split = join(CORPUS, "split-override");
  const merged = await run(ployz, [
    "config",
    "-f",
    join(split, "compose.yaml"),
    "-f",
    join(split, "compose.prod.yaml"),
    "--json",
  ]);
  assert.equal(merged.code, 0, merged.stderr);
  const project = JSON.parse(merged.stdout);
  assert.equal(project.services.worker.replicas, 2);
  assert.deepEqual(project.services.web.environment, { APP_ENV: "production", DEBUG: "0" });
  const profiled = await run(ployz, ["config", "-f", join(CORPUS, "profiles", "compose.yaml"), "--json"], {
    COMPOSE_PROFILES: "tools",
  });
  assert.equal(profiled.code, 0, profiled.stderr);
  assert.deepEqual(Object.keys(JSON.parse(profiled.stdout).services), ["adminer", "app"]);
  const bad = await run(ployz, ["config", "-f", join(CORPUS, "bad", "command-number.yaml")]);
  assert.equal(bad.code, 1);
  assert.match(
    bad.stderr,
    /command-number\.yaml:5:14: services\.web\.command: expected a string or a list of strings/,
  );
  assert.doesNotMatch(bad.stderr, /\n\s+at /, "no stack trace");
});
