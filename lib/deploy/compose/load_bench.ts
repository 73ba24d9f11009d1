// The loader on a realistic Compose file against the YAML parse alone (the baseline), and on hostile input the
// loader must refuse quickly: the ratios show what validation, interpolation and normalization cost on top of
// parsing, and that a merge-key bomb or a large alias fan-out costs about as much as an ordinary file.
import { fileURLToPath } from "node:url";
import { parseDocument } from "yaml";
import { ComposeError } from "./issue.ts";
import { loadCompose } from "./load.ts";

const WEBAPP = fileURLToPath(
  new URL("../../../tests/fixtures/compose/webapp-postgres-redis/compose.yaml", import.meta.url),
);
const TEXT = Deno.readTextFileSync(WEBAPP);

function mergeBomb(): string {
  let text = "x-a0: &a0 {k: v}\n";
  for (let i = 1; i < 25; i++) text += `x-a${i}: &a${i} {<<: [*a${i - 1}, *a${i - 1}]}\n`;
  return text + "services:\n  web:\n    image: b\n    labels: {<<: *a24}\n";
}
const BOMB = mergeBomb();

function refused(text: string): void {
  try {
    loadCompose({ path: "/bench/compose.yaml", text, env: {} });
  } catch (error) {
    if (!(error instanceof ComposeError)) throw error;
  }
}

Deno.bench({ name: "YAML parse of a 3-Service file", group: "compose", baseline: true }, () => {
  parseDocument(TEXT);
});

Deno.bench({ name: "loadCompose of the same file", group: "compose" }, () => {
  loadCompose({ path: WEBAPP, text: TEXT, env: {} });
});

Deno.bench({ name: "loadCompose of a 720-byte merge-key bomb", group: "compose" }, () => {
  refused(BOMB);
});
