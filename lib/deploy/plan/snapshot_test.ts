import assert from "node:assert/strict";
import { takeSnapshot } from "./snapshot.ts";
import { FakeMachine } from "./test_fake.ts";

/** A Machine whose `status` tells when it was asked. */
class Watched extends FakeMachine {
  asked = Promise.withResolvers<void>();
  override status(): ReturnType<FakeMachine["status"]> {
    this.asked.resolve();
    return super.status();
  }
}

Deno.test("takeSnapshot asks a Machine's questions while its precheck still runs", async () => {
  const machine = new Watched("m2", "two");
  const snapshot = await takeSnapshot([{ id: machine.id, name: machine.name, api: machine }], {
    project: "shop",
    images: ["img:1"],
    // Ends only once the Machine was asked for its status: a check that ran first would wait here for ever.
    precheck: async () => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        await Promise.race([
          machine.asked.promise,
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error("status was not asked beside the precheck")), 5_000);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  });
  assert.deepEqual(snapshot.failures, []);
  assert.deepEqual(snapshot.machines.map((m) => [m.machineName, m.images]), [["two", { "img:1": true }]]);
});

Deno.test("takeSnapshot makes a Machine whose precheck fails a failure with that error, whatever it answered", async () => {
  const machines = [new FakeMachine("m1", "one"), new FakeMachine("m2", "two")];
  const snapshot = await takeSnapshot(machines.map((m) => ({ id: m.id, name: m.name, api: m })), {
    project: "shop",
    images: ["img:1"],
    precheck: (m) =>
      m.id === "m2"
        ? Promise.reject(
          Object.assign(new Error('Machine "two" lacks ployz.image.inspect.v1'), { code: "unsupported" }),
        )
        : Promise.resolve(),
  });
  assert.deepEqual(snapshot.machines.map((m) => m.machineName), ["one"]);
  assert.equal(snapshot.failures.length, 1);
  assert.equal(snapshot.failures[0].machineName, "two");
  assert.match(snapshot.failures[0].error.message, /lacks ployz\.image\.inspect\.v1/);
});

/** A Machine that tells when it was asked about an image. */
class Inspected extends FakeMachine {
  asked = new Map<string, PromiseWithResolvers<void>>();
  override inspectImage(r: { ref: string }): ReturnType<FakeMachine["inspectImage"]> {
    this.on(r.ref).resolve();
    return super.inspectImage(r);
  }
  on(ref: string): PromiseWithResolvers<void> {
    if (!this.asked.has(ref)) this.asked.set(ref, Promise.withResolvers<void>());
    return this.asked.get(ref)!;
  }
}

Deno.test("takeSnapshot asks about the images it knows at once while the others are still being resolved", async () => {
  const machine = new Inspected("m1", "one");
  let timer: ReturnType<typeof setTimeout> | undefined;
  // The pinned references are known only once the proxy's image was asked about: asking it later waits for ever.
  const pinned = Promise.race([
    machine.on("img:2").promise.then(() => ["img:1"]),
    new Promise<string[]>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the proxy's image was not asked about at once")), 5_000);
    }),
  ]).finally(() => clearTimeout(timer));
  const snapshot = await takeSnapshot([{ id: machine.id, name: machine.name, api: machine }], {
    project: "shop",
    images: pinned,
    imagesAtOnce: ["img:2"],
  });
  assert.deepEqual(snapshot.failures, []);
  assert.deepEqual(snapshot.machines[0].images, { "img:2": true, "img:1": true });
});

/** A Machine cut off after it took the request: its container list never comes. */
class Silent extends FakeMachine {
  override listContainers(): ReturnType<FakeMachine["listContainers"]> {
    return new Promise(() => {});
  }
}

Deno.test("takeSnapshot makes a Machine that never answers a failure once its bound passed, and observes the rest", async () => {
  const machines = [new FakeMachine("m1", "one"), new Silent("m2", "two")];
  const started = performance.now();
  const snapshot = await takeSnapshot(machines.map((m) => ({ id: m.id, name: m.name, api: m })), {
    project: "shop",
    images: ["img:1"],
    answerWithinMs: 200,
  });
  assert.ok(performance.now() - started < 5_000, "the Snapshot waited for the silent Machine");
  assert.deepEqual(snapshot.machines.map((m) => m.machineName), ["one"]);
  assert.deepEqual(snapshot.failures.map((f) => [f.machineName, f.error.code]), [["two", "unavailable"]]);
  assert.match(
    snapshot.failures[0].error.message,
    /^Machine "two" took the request and sent no answer within 200 ms$/,
  );
});
