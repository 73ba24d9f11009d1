import assert from "node:assert/strict";
import fc from "fast-check";
import { type Copy, copyAfter, type CopyRequest, decideCopy, floorAfter, sameCopy } from "./copy.ts";

const W = (epoch = 1): Copy => ({ role: "writer", epoch });
const M = (snapshot: string): Copy => ({ role: "mirror", snapshot });
const NONE: Copy = { role: "none" };

Deno.test("decideCopy() takes exactly the table's transitions", () => {
  const cases: [Copy, Copy, string][] = [
    [NONE, M("a"), "receive:a:-"],
    [M("a"), M("b"), "receive:b:a"],
    [W(), M("g"), "cut:g"],
    [M("g"), W(), "promote:g"],
    [W(), NONE, "destroy"],
    [M("a"), NONE, "destroy"],
  ];
  for (const [from, to, want] of cases) {
    const decision = decideCopy(from, 0, { expected: from, wanted: to, gen: 1 });
    assert(decision.kind === "step", `${JSON.stringify([from, to])} → ${JSON.stringify(decision)}`);
    const s = decision.step;
    const got = s.kind === "receive"
      ? `receive:${s.snapshot}:${s.base ?? "-"}`
      : s.kind === "cut" || s.kind === "promote"
      ? `${s.kind}:${s.snapshot}`
      : s.kind;
    assert.deepEqual(got, want);
    assert(sameCopy(copyAfter(s), to));
  }
});

Deno.test("decideCopy() refuses what is not in the table, answers success at the want", () => {
  assert.deepEqual(decideCopy(NONE, 0, { expected: NONE, wanted: W(), gen: 1 }).kind, "refused");
  assert.deepEqual(decideCopy(W(3), 0, { expected: W(9), wanted: W(1), gen: 1 }).kind, "at_want");
  assert.deepEqual(decideCopy(M("a"), 0, { expected: NONE, wanted: M("a"), gen: 1 }).kind, "at_want");
  const stale = decideCopy(M("b"), 0, { expected: M("a"), wanted: W(), gen: 1 });
  assert(stale.kind === "refused" && stale.reason === "stale_expected");
  assert(stale.message.includes("Mirror@b"), stale.message);
  const late = decideCopy(M("a"), 5, { expected: M("a"), wanted: M("a"), gen: 4 });
  assert(late.kind === "refused" && late.reason === "below_floor");
});

// A Cluster of three Machines, one Volume, and an operator that runs one Volume Run at a time (gen 1, 2, …). Each
// run reads every copy live, fences every Machine at its gen (a request already at the want), then sends its steps
// one at a time, each only after the previous one answered success. Any request may be duplicated and delivered
// late, or held back and delivered late while the run is lost; the operator may die before any step.
type Kind = "move" | "mirror" | "sync" | "rm" | "release" | "recover";
type Action =
  | { t: "run"; kind: Kind; target: number; killAt: number; holdAt: number; dup: boolean[] }
  | { t: "late"; pick: number };

interface Machine {
  copy: Copy;
  floor: number;
}

const MACHINES = 3;

function property(actions: Action[]): void {
  const machines: Machine[] = Array.from({ length: MACHINES }, (_, i) => ({
    copy: i === 0 ? W(0) : NONE,
    floor: 0,
  }));
  const late: { to: number; request: CopyRequest }[] = [];
  let gen = 0;

  const deliver = (to: number, request: CopyRequest): boolean => {
    const m = machines[to];
    const decision = decideCopy(m.copy, m.floor, request);
    if (decision.kind !== "refused") {
      assert(request.gen >= m.floor, `accepted gen ${request.gen} below floor ${m.floor}`);
    }
    if (decision.kind === "step") m.copy = copyAfter(decision.step);
    const floor = floorAfter(m.floor, request.gen, decision);
    assert(floor >= m.floor, "the floor went down");
    m.floor = floor;
    const writers = machines.filter((x) => x.copy.role === "writer").length;
    assert(writers <= 1, `two Writers: ${JSON.stringify(machines)}`);
    return decision.kind !== "refused";
  };

  for (const action of actions) {
    if (action.t === "late") {
      if (late.length > 0) {
        const [held] = late.splice(action.pick % late.length, 1);
        deliver(held.to, held.request);
      }
      continue;
    }
    gen += 1;
    const seen = machines.map((m) => m.copy);
    let sent = 0;
    // Returns false when the run stops: killed, held back (lost), or refused.
    const send = (to: number, expected: Copy, wanted: Copy): boolean => {
      const i = sent++;
      if (i === action.killAt) return false;
      const request = { expected, wanted, gen };
      if (i === action.holdAt) {
        late.push({ to, request });
        return false;
      }
      if (action.dup[i % action.dup.length]) late.push({ to, request });
      return deliver(to, request);
    };
    const run = (): void => {
      for (let i = 0; i < MACHINES; i++) if (!send(i, seen[i], seen[i])) return;
      const writer = seen.findIndex((c) => c.role === "writer");
      const target = action.target % MACHINES;
      const snap = (n: number): string => `g${gen}-${n}`;
      switch (action.kind) {
        case "move": {
          if (writer < 0 || writer === target) return;
          if (!send(target, seen[target], M(snap(1)))) return;
          if (!send(writer, seen[writer], M(snap(2)))) return;
          if (!send(target, M(snap(1)), M(snap(2)))) return;
          send(target, M(snap(2)), W(gen));
          return;
        }
        case "mirror":
          if (writer >= 0 && writer !== target) send(target, seen[target], M(snap(1)));
          return;
        case "sync":
          seen.forEach((c, i) => {
            if (writer >= 0 && c.role === "mirror") send(i, c, M(snap(1 + i)));
          });
          return;
        case "rm":
          if (seen[target].role === "mirror") send(target, seen[target], NONE);
          return;
        case "release":
          if (writer >= 0) send(writer, seen[writer], NONE);
          return;
        case "recover":
          if (writer < 0 && seen[target].role === "mirror") send(target, seen[target], W(gen));
          return;
      }
    };
    run();
  }
  // Every held request delivered at the very end too.
  for (const held of late) deliver(held.to, held.request);
}

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    t: fc.constant("run" as const),
    kind: fc.constantFrom<Kind>("move", "move", "mirror", "sync", "rm", "release", "recover", "recover"),
    target: fc.nat(MACHINES - 1),
    killAt: fc.nat(12),
    holdAt: fc.nat(12),
    dup: fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
  }),
  fc.record({ t: fc.constant("late" as const), pick: fc.nat() }),
);

Deno.test("late and repeated requests of old runs never make two Writers nor pass the floor", () => {
  fc.assert(fc.property(fc.array(action, { maxLength: 40 }), property), { numRuns: 2000 });
});

Deno.test("without the fence, a late promote from a lost Move does make a second Writer", () => {
  // The property above can fail: run 1 cuts m0 and its promote of m1 is held; run 2 promotes m0 back (undo)
  // without fencing m1; the held promote then lands on m1.
  const m0: Machine = { copy: W(0), floor: 0 };
  const m1: Machine = { copy: M("g1-1"), floor: 1 };
  const apply = (m: Machine, r: CopyRequest): void => {
    const d = decideCopy(m.copy, m.floor, r);
    if (d.kind === "step") m.copy = copyAfter(d.step);
    m.floor = floorAfter(m.floor, r.gen, d);
  };
  apply(m0, { expected: W(0), wanted: M("g1-2"), gen: 1 });
  apply(m1, { expected: M("g1-1"), wanted: M("g1-2"), gen: 1 });
  apply(m0, { expected: M("g1-2"), wanted: W(2), gen: 2 });
  apply(m1, { expected: M("g1-2"), wanted: W(1), gen: 1 });
  assert.deepEqual([m0.copy.role, m1.copy.role], ["writer", "writer"]);
  // With run 2's fence on m1 first, the same late promote is refused.
  m0.copy = M("g1-2");
  m1.copy = M("g1-2");
  apply(m1, { expected: M("g1-2"), wanted: M("g1-2"), gen: 2 });
  apply(m0, { expected: M("g1-2"), wanted: W(2), gen: 2 });
  apply(m1, { expected: M("g1-2"), wanted: W(1), gen: 1 });
  assert.deepEqual([m0.copy.role, m1.copy.role], ["writer", "mirror"]);
});
