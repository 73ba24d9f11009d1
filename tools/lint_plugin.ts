/**
 * Local lint rules for Ployz.
 *
 * `ployz/area-boundary`: a module under `lib/<area>/` may import another area only through that area's
 * `mod.ts`, so each area keeps one small public surface.
 *
 * @module
 */

function areaOf(path: string): string | undefined {
  return path.match(/\/lib\/([^/]+)\//)?.[1];
}

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
            if (targetArea === undefined || targetArea === areaOf(from)) return;
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
