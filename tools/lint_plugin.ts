/**
 * Local lint rules for Ployz.
 *
 * `ployz/area-boundary`: a module under `lib/<area>/` may import another area only through that area's
 * `mod.ts`, so each area keeps one small public surface. `lib/util` is the leaf every area may import (through
 * its `mod.ts`) and it imports no other area, so it can never close a cycle.
 *
 * @module
 */

function areaOf(path: string): string | undefined {
  return path.match(/\/lib\/([^/]+)\//)?.[1];
}

/** The leaf area: importable from everywhere, importing nothing of ours. */
const LEAF = "util";

const plugin: Deno.lint.Plugin = {
  name: "ployz",
  rules: {
    "area-boundary": {
      create(context) {
        const from = context.filename;
        return {
          ImportDeclaration(node) {
            const spec = node.source.value;
            if (!spec.startsWith(".")) return;
            const target = new URL(spec, `file://${from}`).pathname;
            const targetArea = areaOf(target);
            const fromArea = areaOf(from);
            if (targetArea === undefined || targetArea === fromArea) return;
            if (fromArea === LEAF) {
              context.report({
                node: node.source,
                message: `Import "${spec}" reaches into lib/${targetArea}: lib/${LEAF} imports no other area`,
              });
              return;
            }
            if (target.endsWith(`/lib/${targetArea}/mod.ts`)) return;
            context.report({
              node: node.source,
              message:
                `Import "${spec}" reaches into lib/${targetArea}: import "lib/${targetArea}/mod.ts" instead`,
            });
          },
        };
      },
    },
  },
};

export default plugin;
