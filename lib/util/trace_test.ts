import { equal, match } from "node:assert/strict";
import { traceLine, traceMark } from "./trace.ts";

Deno.test("a trace line names the time since the process started and the label", () => {
  equal(traceLine("deploy: planned", 1234.56), "ployz trace   1234.6 deploy: planned");
  match(traceLine("x"), /^ployz trace +\d+\.\d x$/);
});

Deno.test("without PLOYZ_TRACE=1 a mark writes nothing", () => {
  const error = console.error;
  const written: unknown[] = [];
  console.error = (...args: unknown[]) => written.push(args);
  try {
    traceMark("nothing");
  } finally {
    console.error = error;
  }
  equal(Deno.env.get("PLOYZ_TRACE") === "1" ? 1 : 0, written.length);
});
