import assert from "node:assert/strict";
import { table } from "./table.ts";

Deno.test("table aligns columns two spaces apart, trims trailing blanks and lets a short row end early", () => {
  assert.equal(
    table(["NAME", "STATE", "NOTE"], [["web-1", "running", ""], ["db", "exited", "137"], ["x"]]),
    "NAME   STATE    NOTE\n" +
      "web-1  running\n" +
      "db     exited   137\n" +
      "x\n",
  );
  assert.equal(table(["A", "B"], []), "A  B\n");
});
