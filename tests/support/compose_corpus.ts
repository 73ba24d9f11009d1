/**
 * The Compose corpus under tests/fixtures/compose/: its manifest and how each entry is loaded, shared by the
 * corpus test and the lab test that deploys part of it.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { parseEnvFile } from "../../lib/deploy/mod.ts";
import { ROOT } from "./spawn.ts";

/** The corpus directory. */
export const CORPUS: string = join(ROOT, "tests", "fixtures", "compose");

/** One corpus entry: the files merged in order, the profiles enabled, the variables set. */
export interface CorpusEntry {
  name: string;
  files: string[];
  profiles?: string[];
  env?: Record<string, string>;
  /** Deployed by the lab test. */
  lab?: boolean;
}

/** The corpus manifest. */
export function corpus(): CorpusEntry[] {
  return JSON.parse(Deno.readTextFileSync(join(CORPUS, "corpus.json")));
}

/** Variables as the CLI sees them: the `.env` beside the first file, under the entry's own. */
export function corpusEnv(entry: CorpusEntry): Record<string, string> {
  let dotEnv: Record<string, string> = {};
  try {
    dotEnv = parseEnvFile(Deno.readTextFileSync(join(CORPUS, dirname(entry.files[0]), ".env")), {}).vars;
  } catch {
    // No .env beside this one.
  }
  return { ...dotEnv, ...entry.env };
}

/** The absolute paths of an entry's files. */
export function corpusFiles(entry: CorpusEntry): string[] {
  return entry.files.map((file) => join(CORPUS, file));
}
