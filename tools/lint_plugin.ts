/**
 * Local lint rules for Ployz.
 *
 * `ployz/area-boundary`: a module outside `lib/<area>/` (another area, `cmd/`, `tests/`, `tools/`) reaches
 * `lib/<area>/` only through that area's `mod.ts` (or a sub-area's `lib/<area>/<part>/mod.ts`, a narrower door for
 * a process that needs only that part), so each area keeps one small public surface. It holds for
 * every way one module names another: `import … from`, `export … from`, `export * from` and `import("…")`
 * with a literal specifier. `lib/util` is the leaf every area may import (through its `mod.ts`) and it imports no
 * other area, so it can never close a cycle.
 *
 * `ployz/zod-namespace`: zod is imported as `import * as z from "zod"` (or by name, `import { object } from "zod"`),
 * never as its `z` export or its default: those are one namespace object holding every export, so the bundler keeps
 * all of zod in the bundles, its ~40 locales and JSON Schema code included (`tools/build/bundle.ts`).
 *
 * @module
 */

/** The area of `path` (`lib/<area>/…`), or undefined outside `lib/`. */
export function areaOf(path: string): string | undefined {
  return path.match(/\/lib\/([^/]+)\//)?.[1];
}

/** The leaf area: importable from everywhere, importing nothing of ours. */
const LEAF = "util";

/**
 * Why `from` may not name `spec`, or undefined when it may: a relative specifier resolving into another area than
 * `from`'s, at a file other than that area's `mod.ts`.
 */
export function boundaryViolation(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const target = new URL(spec, `file://${from}`).pathname;
  const targetArea = areaOf(target);
  const fromArea = areaOf(from);
  if (targetArea === undefined || targetArea === fromArea) return undefined;
  if (fromArea === LEAF) {
    return `Import "${spec}" reaches into lib/${targetArea}: lib/${LEAF} imports no other area`;
  }
  if (target.endsWith(`/lib/${targetArea}/mod.ts`)) return undefined;
  // A narrower door: a sub-area's own mod.ts (lib/deploy/machine/mod.ts), so a process can load part of an area.
  if (new RegExp(`/lib/${targetArea}/[^/]+/mod\\.ts$`).test(target)) return undefined;
  return `Import "${spec}" reaches into lib/${targetArea}: import "lib/${targetArea}/mod.ts" instead`;
}

/** Why an import of `names` from `spec` may not stand, or undefined when it may (`ployz/zod-namespace`). */
export function zodImportViolation(spec: string, names: readonly string[]): string | undefined {
  if (spec !== "zod") return undefined;
  if (!names.includes("z") && !names.includes("default")) return undefined;
  return `Import zod as import * as z from 'zod': its "z" and default exports keep all of zod, every locale ` +
    `included, in the bundles`;
}

const plugin: Deno.lint.Plugin = {
  name: "ployz",
  rules: {
    "area-boundary": {
      create(context) {
        const from = context.filename;
        function check(source: Deno.lint.Node | null | undefined): void {
          if (source?.type !== "Literal" || typeof source.value !== "string") return;
          const message = boundaryViolation(from, source.value);
          if (message !== undefined) context.report({ node: source, message });
        }
        return {
          ImportDeclaration(node): void {
            check(node.source);
          },
          ExportNamedDeclaration(node): void {
            check(node.source);
          },
          ExportAllDeclaration(node): void {
            check(node.source);
          },
          ImportExpression(node): void {
            check(node.source);
          },
        };
      },
    },
    "zod-namespace": {
      create(context) {
        return {
          ImportDeclaration(node): void {
            if (typeof node.source.value !== "string") return;
            const names = node.specifiers.map((s) =>
              s.type === "ImportDefaultSpecifier"
                ? "default"
                : s.type === "ImportSpecifier"
                ? (s.imported.type === "Identifier" ? s.imported.name : String(s.imported.value))
                : "*"
            );
            const message = zodImportViolation(node.source.value, names);
            if (message !== undefined) context.report({ node, message });
          },
        };
      },
    },
  },
};

export default plugin;
