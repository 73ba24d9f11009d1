import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

// In a process whose standard input is not a terminal (as under CI, a pipe or cron): refused as a usage mistake.
Deno.test("confirmed refuses without a terminal: invalid_argument, exit 2, naming what and -y", async () => {
  const module = fileURLToPath(new URL("./confirm.ts", import.meta.url));
  const script = `const { confirmed } = await import(${JSON.stringify(module)});
try {
  await confirmed("prune", "Remove 3 image(s)?");
  console.log("answered");
} catch (error) {
  console.log(JSON.stringify({ code: error.code, exit: error.exitCode, message: error.message }));
}`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.deepEqual(JSON.parse(text), {
    code: "invalid_argument",
    exit: 2,
    message: "Refusing to prune without confirmation: standard input is not a terminal; pass -y to confirm",
  });
});
