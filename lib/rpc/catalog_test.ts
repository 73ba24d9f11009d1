import assert from "node:assert/strict";
import * as z from "zod";
import { CATALOG } from "./catalog.ts";

Deno.test("every catalog reader is built on first use, not at import (route.ts)", () => {
  const eager = Object.entries(CATALOG).flatMap(([name, route]) =>
    [["request", route.request], ["response", route.response]]
      .filter(([, reader]) => reader !== "stream" && !(reader instanceof z.ZodLazy))
      .map(([side]) => `${name}.${side}`)
  );
  assert.deepEqual(eager, []);
});
