import assert from "node:assert/strict";
import { renderPlot, sparkline } from "./plot.ts";

Deno.test("a gap is a blank column and a zero the lowest block", () => {
  assert.equal(sparkline([0, undefined, 4, 8]), "▁ ▄█");
  assert.deepEqual(renderPlot([0, 8, undefined, 4], { height: 2 }), [" █  ", "▁█ █"]);
  assert.equal(sparkline([undefined, undefined]), "  ");
  assert.equal(sparkline([0, 0]), "▁▁");
  assert.equal(sparkline([5, 20], 10), "▄█");
});
