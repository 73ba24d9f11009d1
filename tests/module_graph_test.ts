// Each process loads only what it runs: the module graph of each ployzd subcommand and of the CLI's cheapest
// commands, read from `deno info`, holds none of the areas and packages that process has no use for.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { loadedModules } from "../tools/module_graph.ts";

function areasOf(files: string[]): Set<string> {
  return new Set(files.filter((f) => f.startsWith("lib/")).map((f) => f.split("/")[1]));
}

Deno.test("ployzd dns loads no Docker, store, hono, planner or daemon module", async () => {
  const loaded = await loadedModules("cmd/ployzd.ts", ["cmd/ployzd/dns.ts"]);
  deepEqual([...areasOf(loaded.files)].sort(), ["cli", "dns", "permissions", "util"]);
  deepEqual(loaded.npm, []);
  ok(!loaded.node.includes("node:sqlite"), loaded.node.join(" "));
  // Of Node's modules only the CLI's and the paths' (lib/permissions/runtime_flags.ts: what dns costs).
  deepEqual(loaded.node.filter((m) => !["node:path", "node:url", "node:util"].includes(m)), []);
  ok(loaded.files.includes("lib/dns/server.ts"), "the graph reaches the DNS server itself");
});

Deno.test("ployzd observe loads the Observe Store and nothing of the daemon, Docker or the planner", async () => {
  const loaded = await loadedModules("cmd/ployzd.ts", ["cmd/ployzd/observe.ts"]);
  deepEqual([...areasOf(loaded.files)].sort(), ["cli", "observe", "permissions", "util"]);
  for (const pkg of ["dockerode", "yaml", "@noble/curves", "protobufjs", "zod"]) {
    ok(!loaded.npm.includes(pkg), pkg);
  }
});

Deno.test("ployzd serve loads neither the Observe Store, the lab, dockerode, acme-client nor x509", async () => {
  const loaded = await loadedModules("cmd/ployzd.ts", ["cmd/ployzd/serve.ts"]);
  const areas = areasOf(loaded.files);
  for (const area of ["observe", "lab"]) ok(!areas.has(area), area);
  // The Engine speaks HTTP to Docker's socket itself; dockerode's gRPC and SSH packages cost ~30 MB of RSS.
  // acme-client (~36 MB) and @peculiar/x509 are imported only when a certificate is first needed.
  for (const pkg of ["dockerode", "docker-modem", "ssh2", "@grpc/grpc-js", "acme-client", "@peculiar/x509"]) {
    ok(!loaded.npm.includes(pkg), pkg);
  }
});

Deno.test("ployzd serve loads neither the Compose loader, YAML, the planner, the DNS server nor the installer's upgrade path", async () => {
  const loaded = await loadedModules("cmd/ployzd.ts", ["cmd/ployzd/serve.ts"]);
  ok(!loaded.npm.includes("yaml"), loaded.npm.join(" "));
  // Of lib/deploy, the daemon takes the Machine side only (lib/deploy/machine/mod.ts): Docker, and the label and
  // placement rules it re-checks on each create.
  const deploy = loaded.files.filter((f) =>
    f.startsWith("lib/deploy/") && !f.startsWith("lib/deploy/docker/")
  );
  deepEqual(deploy, [
    "lib/deploy/compose/placement.ts",
    "lib/deploy/compose/serving_labels.ts",
    "lib/deploy/machine/mod.ts",
  ]);
  // Of lib/installer, what an idle daemon runs: paths, unit rendering and the "is an upgrade running" check. The
  // upgrade path (request, staging, signatures, activation, SSH provisioning) is imported on the first upgrade.
  deepEqual(loaded.files.filter((f) => f.startsWith("lib/installer/")), [
    "lib/installer/attempt.ts",
    "lib/installer/errors.ts",
    "lib/installer/machine/mod.ts",
    "lib/installer/paths.ts",
    "lib/installer/running.ts",
    "lib/installer/systemd_escape.ts",
    "lib/installer/units.ts",
  ]);
  ok(
    loaded.files.includes("lib/daemon/upgrade_handlers.ts"),
    "the graph reaches the daemon's upgrade routes",
  );
});

Deno.test("ployz version and ployz --help load the command list only", async () => {
  const loaded = await loadedModules("cmd/ployz.ts");
  deepEqual([...areasOf(loaded.files)].sort(), ["cli", "util"]);
  deepEqual(loaded.npm, []);
  // The entry, the command list and the import-free flag parsing; never a command's own module.
  deepEqual(loaded.files.filter((f) => f.startsWith("cmd/")), [
    "cmd/ployz.ts",
    "cmd/ployz/program.ts",
    "cmd/ployz/selection.ts",
    "cmd/shared_version.ts",
  ]);
});

Deno.test("ployz ps, ls, logs, inspect and top load neither the operator's flows nor the Compose loader", async () => {
  for (const command of ["ps", "ls", "logs", "inspect", "top"]) {
    const loaded = await loadedModules("cmd/ployz.ts", [`cmd/ployz/${command}.ts`]);
    // They reach a Cluster and read it: the connection, the Config Store, the RPC client and the ssh arguments.
    deepEqual([...areasOf(loaded.files)].sort(), [
      "cli",
      "installer",
      "operator",
      "permissions",
      "rpc",
      "store",
      "util",
    ], command);
    ok(!loaded.npm.includes("yaml"), `${command}: ${loaded.npm.join(" ")}`);
    // Of those areas, the narrower doors and what they re-export (lib/operator/reach, lib/installer/ssh,
    // lib/store/config), never the areas' own mod.ts.
    deepEqual(loaded.files.filter((f) => /^lib\/(operator|installer|store)\//.test(f)), [
      "lib/installer/errors.ts",
      "lib/installer/ssh.ts",
      "lib/installer/ssh/mod.ts",
      "lib/operator/connection.ts",
      "lib/operator/context.ts",
      "lib/operator/errors.ts",
      "lib/operator/log_fanout.ts",
      "lib/operator/reach/mod.ts",
      "lib/operator/targets.ts",
      "lib/store/config/mod.ts",
      "lib/store/config_store.ts",
      "lib/store/errors.ts",
    ], command);
  }
});

Deno.test("a release tree missing a module fails the command that needs it in one line, exit 1", async () => {
  const root = fromFileUrl(new URL("../", import.meta.url));
  const tree = await Deno.makeTempDir({ prefix: "ployz-broken-release-" });
  try {
    for (const entry of ["cmd", "lib", "bin", "deno.json", "deno.lock"]) {
      await new Deno.Command("cp", { args: ["-r", join(root, entry), tree] }).output();
    }
    await Deno.symlink(join(root, "node_modules"), join(tree, "node_modules"));
    // A release tree carries its deno beside deno.json.
    await Deno.symlink(Deno.execPath(), join(tree, "deno"));
    await Deno.remove(join(tree, "lib", "dns", "zone.ts"));
    const run = (...args: string[]) =>
      new Deno.Command(join(tree, "bin", "ployzd"), {
        args,
        env: { PLOYZ_RUN_DIR: tree, NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
    const out = await run("dns", "--probe");
    const stderr = new TextDecoder().decode(out.stderr);
    equal(out.code, 1, stderr);
    match(stderr, /^error\[internal\]: Cannot load "ployzd dns": Module not found ".*\/lib\/dns\/zone\.ts"/);
    equal(stderr.trimEnd().split("\n").length, 1, stderr);
    // Commands that do not need the missing module still run.
    equal((await run("version")).code, 0);
  } finally {
    await Deno.remove(tree, { recursive: true });
  }
});
