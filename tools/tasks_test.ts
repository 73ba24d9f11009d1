// Every `deno task` that runs a script names one that exists: a task pointing at a moved file fails here,
// not when someone first runs it.
import { deepEqual } from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

Deno.test("every deno.json task that runs a script names a file that exists", () => {
  const config = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json")));
  const missing: string[] = [];
  for (const [name, task] of Object.entries(config.tasks as Record<string, string | { command: string }>)) {
    const command = typeof task === "string" ? task : task.command;
    for (const [, script] of command.matchAll(/deno run [^&;|]*?((?:tools|cmd)\/[\w./-]+\.ts)/g)) {
      try {
        Deno.statSync(join(ROOT, script));
      } catch {
        missing.push(`${name}: ${script}`);
      }
    }
  }
  deepEqual(missing, []);
});
