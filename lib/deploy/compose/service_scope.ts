/**
 * What reading one service needs from the rest of the compose file.
 *
 * @module
 */

import type { FileContents, FileSource } from "./files.ts";
import type { Reader } from "./reader.ts";

/** What a service needs from the rest of the file. */
export interface ServiceScope {
  reader: Reader;
  env: Readonly<Record<string, string>>;
  baseDir: string;
  readFile: (path: string) => string;
  /** Top-level volume keys. */
  volumes: ReadonlySet<string>;
  /** Every service name in the file. */
  services: ReadonlySet<string>;
  /** Filled in while reading: each service's dependencies, even for services with problems. */
  dependencies: Map<string, string[]>;
  /** Top-level secrets and configs. */
  secrets: ReadonlyMap<string, FileSource>;
  configs: ReadonlyMap<string, FileSource>;
  /** Filled in while reading: the content of every shipped file, by digest. */
  contents: FileContents;
  /** The Project's name, which names built images; absent when it has problems. */
  project?: string;
}
