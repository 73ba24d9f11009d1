/**
 * Helpers for the loader's tests: load text with in-memory files and pick out issues; a normalized build.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ComposeError, type ComposeIssue } from "./issue.ts";
import { loadCompose, type LoadedCompose } from "./load.ts";
import type { NormalizedBuild } from "./types.ts";

/** Options for {@linkcode loadText}. */
export interface LoadTextOptions {
  env?: Record<string, string>;
  files?: Record<string, string>;
  path?: string;
  projectName?: string;
}

/** Loads `text` as `/proj/compose.yaml` (project "proj" by default) with in-memory neighbour files. */
export function loadText(text: string, options: LoadTextOptions = {}): LoadedCompose {
  const files = options.files ?? {};
  return loadCompose({
    path: options.path ?? "/proj/compose.yaml",
    text,
    env: options.env ?? {},
    projectName: options.projectName,
    readFile: (path: string): string => {
      if (Object.hasOwn(files, path)) return files[path];
      throw new Deno.errors.NotFound(`No such file: ${path}`);
    },
  });
}

/** Loads `text`, asserts it fails, and returns every issue. */
export function problems(text: string, options: LoadTextOptions = {}): readonly ComposeIssue[] {
  try {
    loadText(text, options);
  } catch (error) {
    assert.ok(error instanceof ComposeError, `expected a ComposeError, got ${error}`);
    assert.equal(error.code, "invalid_argument");
    return error.issues;
  }
  assert.fail("expected the file to be refused");
}

/** Asserts exactly one issue with this position, path and message pattern, and returns it. */
export function onlyIssue(
  list: readonly ComposeIssue[],
  expected: { file?: string; line: number; column?: number; path: string; message: RegExp },
): ComposeIssue {
  assert.equal(
    list.length,
    1,
    `expected one issue, got:\n${list.map((item) => JSON.stringify(item)).join("\n")}`,
  );
  const [found] = list;
  assert.equal(found.file, expected.file ?? "/proj/compose.yaml");
  assert.equal(found.line, expected.line, `line of ${JSON.stringify(found)}`);
  if (expected.column !== undefined) {
    assert.equal(found.column, expected.column, `column of ${JSON.stringify(found)}`);
  }
  assert.equal(found.path, expected.path);
  assert.match(found.message, expected.message);
  return found;
}

/** A Service's normalized `build:` of `context` with every other field at its default, then `extra`. */
export function buildOf(context: string, extra: Partial<NormalizedBuild> = {}): NormalizedBuild {
  return {
    context,
    dockerfile: null,
    dockerfileInline: null,
    args: {},
    target: null,
    labels: {},
    cacheFrom: [],
    noCache: false,
    image: null,
    ...extra,
  };
}
